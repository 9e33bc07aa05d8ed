// run_health_checks: every probe in order, each check timed, a probe that throws turned
// into a failed check (health_probes.hpp).
#include "health_probes.hpp"

#include <unistd.h>

#include <chrono>

namespace msomni::health {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

health_report config_failed_report(const std::string& config_path, const std::vector<std::string>& problems,
                                   health_level level) {
  health_report r;
  r.node = host_name();
  r.config = config_path;
  r.level = level;
  r.checks.push_back(judge_problems("config.schema", problems, ""));
  return r;
}

health_report run_health_checks(const config::job_config& cfg, const health_options& o) {
  health_report r;
  r.node = host_name();
  r.config = cfg.source_path;
  r.level = o.level;
  using clock_type = std::chrono::steady_clock;
  auto t0 = clock_type::now();
  const add_fn add = [&](check_result c) {
    const auto now = clock_type::now();
    if (c.ms == 0.0) c.ms = std::chrono::duration<double, std::milli>(now - t0).count();
    t0 = now;
    r.checks.push_back(std::move(c));
  };
  const std::pair<const char*, void (*)(const config::job_config&, const health_options&, const add_fn&)> probes[] = {
      {"config", probe_config_and_data}, {"compute", probe_compute}, {"comm", probe_communication},
      {"storage", probe_storage},        {"host", probe_host},           {"store", probe_store}};
  for (const auto& [group, probe] : probes) {
    try {
      probe(cfg, o, add);
    } catch (const std::exception& e) {
      add(judge_problems(std::string(group) + ".probe", {std::string("the probe stopped: ") + e.what()}, ""));
    }
  }
  return r;
}

}  // namespace msomni::health
