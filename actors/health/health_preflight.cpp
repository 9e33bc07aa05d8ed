// msomni-run's pre-flight (health_preflight.hpp).
#include "health_preflight.hpp"

#include "health_probes.hpp"
#include "health_report.hpp"

#include <map>
#include <ostream>

namespace msomni::health {

int run_preflight(const config::job_config& cfg, const std::filesystem::path& checkpoint_dir, std::ostream& err,
                  nlohmann::ordered_json* report_json) {
  if (cfg.health.preflight == "off") return 0;
  health_options o;
  o.level = parse_level(cfg.health.preflight).value_or(health_level::quick);
  o.checkpoint_dir = checkpoint_dir;
  const auto report = run_health_checks(cfg, o);
  if (report_json) *report_json = to_json(report);
  const auto v = verdict(report);
  if (v == check_status::fail) {
    err << render_table(report);  // the whole report: what failed, beside what was fine
  } else {
    // One line when all is well, plus each warning: the table is `msomni health-check`'s.
    std::map<check_status, int> n;
    for (const auto& c : report.checks) ++n[c.status];
    err << "msomni-run: pre-flight (" << to_string(o.level) << "): " << to_string(v) << ", "
        << n[check_status::pass] << " passed, " << n[check_status::warn] << " warned, " << n[check_status::skipped]
        << " skipped (msomni health-check shows every check)\n";
    for (const auto& c : report.checks)
      if (c.status == check_status::warn) err << "  warn " << c.id << ": " << c.reason << "\n";
  }
  if (v != check_status::fail) return 0;
  err << "msomni-run: pre-flight check failed; nothing was started (health.preflight = \"off\" skips it)\n";
  return preflight_failed_exit;
}

}  // namespace msomni::health
