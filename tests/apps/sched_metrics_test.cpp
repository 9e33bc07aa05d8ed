// msomni-sched's own Prometheus endpoint, as a real process over UCX on loopback: with
// --metrics-port auto it serves /metrics on 127.0.0.1 (and nowhere else) with every family
// the catalog lists for the scheduler and for every process; the jobs by class and phase
// match what `msomni job` submitted, GPUs free and used add up to --gpus, a running critical
// job's forecast series appear and go when it ends, and `msomni sched-status` names the
// address. --metrics-port 0 serves nothing; a --metrics-host that is not IPv4 is refused.
#include "core/child_process.hpp"
#include "metrics/metric_catalog.hpp"
#include "support/http_get.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/sched_service.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using msomni::child_process;
using msomni::testing::http_request;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

struct endpoint {
  std::string host;
  uint16_t port = 0;
};

// msomni-sched on 8 GPUs with a 1 s reservation window and `extra` flags; waits until it listens.
std::unique_ptr<child_process> start_scheduler(const temp_dir& dir, std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"--reservation-window-s", "1"});
  return msomni::testing::start_scheduler(dir, 8, extra);
}

// The address in msomni-sched's "msomni-sched: metrics http://HOST:PORT/metrics" line.
endpoint metrics_endpoint_of(child_process& sched) {
  const auto line = sched.read_until("msomni-sched: metrics http://", 10s);
  REQUIRE_MESSAGE(line, sched.log);
  const std::string prefix = "msomni-sched: metrics http://";
  const std::string rest = line->substr(prefix.size());
  const auto colon = rest.find(':');
  const auto slash = rest.find("/metrics");
  REQUIRE(colon != std::string::npos);
  REQUIRE(slash != std::string::npos);
  return {rest.substr(0, colon), static_cast<uint16_t>(std::stoul(rest.substr(colon + 1, slash - colon - 1)))};
}

std::string scrape(const endpoint& e) {
  const auto r = http_request(e.host, e.port, "/metrics");
  REQUIRE(r.status == 200);
  return r.body;
}

// The value of the series written exactly as `series` (NAME or NAME{labels in name order}).
std::optional<double> sample(const std::string& body, const std::string& series) {
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return std::nullopt;
}

double jobs(const std::string& body, const std::string& klass, const std::string& phase) {
  return sample(body, "msomni_sched_jobs{class=\"" + klass + "\",phase=\"" + phase + "\"}").value_or(-1);
}

double jobs_of_class(const std::string& body, const std::string& klass) {
  double n = 0;
  for (const char* phase : {"pending", "running", "draining", "guest"}) n += jobs(body, klass, phase);
  return n;
}

// Scrapes until `ok` holds for a scrape (at most `limit`); returns the last scrape.
template <class Ok>
std::string scrape_until(const endpoint& e, Ok ok, std::chrono::seconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string body = scrape(e);
  while (!ok(body) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
    body = scrape(e);
  }
  return body;
}

// `msomni job` for `id` of `klass` on `gpus` GPUs, running `command` (sh -c); waits until it started.
std::unique_ptr<child_process> start_job(const temp_dir& dir, const std::string& id, const std::string& klass,
                                         int gpus, const std::string& command) {
  const auto run_dir = dir.path() / (id + "-run");
  std::filesystem::create_directories(run_dir);
  auto job = std::make_unique<child_process>(
      MSOMNI_CLI_BINARY,
      std::vector<std::string>{"job", "--scheduler-info", (dir.path() / "info").string(), "--id", id, "--class", klass,
                               "--gpus", std::to_string(gpus), "--run-dir", run_dir.string(), "--", "sh", "-c",
                               "METRICS=" + (run_dir / "metrics.jsonl").string() + "; " + command});
  REQUIRE_MESSAGE(job->read_until("msomni job " + id + ": started", 20s), job->log);
  return job;
}

void stop(child_process& p) {
  ::kill(p.pid(), SIGTERM);
  p.wait(20s);
}

}  // namespace

TEST_CASE("sched_metrics: msomni-sched --metrics-port auto serves its families on 127.0.0.1 only") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--metrics-port", "auto"});
  const endpoint e = metrics_endpoint_of(*sched);
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port != 0);
  // Bound to 127.0.0.1 itself, not to every address: another loopback address finds nothing.
  CHECK_THROWS(http_request("127.0.0.2", e.port, "/metrics"));
  CHECK(http_request(e.host, e.port, "/other").status == 404);

  // A critical job on 4 GPUs whose command writes 40 steps as msomni-run does (1 s steps,
  // half of each waiting for data), and a best-effort job on 2 GPUs.
  std::string steps;
  for (int i = 1; i <= 40; ++i)
    steps += json{{"step", i}, {"step_time_ms", 1000.0}, {"data_wait_ms", 500.0}}.dump() + "\n";
  const std::string steps_file = dir.write("steps", steps);
  auto crit = start_job(dir, "crit", "critical", 4, "cat " + steps_file + " >> \"$METRICS\"; exec sleep 120");
  auto be = start_job(dir, "be", "best-effort", 2, "exec sleep 120");

  // The forecast of the running critical job appears once its step reports are in.
  const std::string body = scrape_until(e, [](const std::string& b) {
    return sample(b, "msomni_sched_idle_confidence{job=\"crit\"}").has_value();
  });
  // Every family the catalog lists for the scheduler and for every process is there.
  size_t families = 0;
  for (const auto& f : msomni::metrics::metric_catalog()) {
    if (f.exported_by != "scheduler" && f.exported_by != "every process") continue;
    ++families;
    CHECK_MESSAGE(body.find("# TYPE " + std::string(f.name) + " ") != std::string::npos, f.name << "\n" << body);
  }
  CHECK(families >= 20);
  // The jobs as submitted: one critical job running, one best-effort job (alone on free GPUs
  // or a guest of the critical job), nothing else.
  CHECK(jobs(body, "critical", "running") == 1);
  CHECK(jobs_of_class(body, "critical") == 1);
  CHECK(jobs_of_class(body, "regular") == 0);
  CHECK(jobs_of_class(body, "best_effort") == 1);
  const double be_alone = jobs(body, "best_effort", "running");
  CHECK(be_alone + jobs(body, "best_effort", "guest") == 1);
  const auto free = sample(body, "msomni_sched_gpus{state=\"free\"}");
  const auto used = sample(body, "msomni_sched_gpus{state=\"used\"}");
  REQUIRE(free);
  REQUIRE(used);
  CHECK(*free + *used == 8);
  CHECK(*used == 4 + 2 * be_alone);
  CHECK(sample(body, "msomni_sched_guests") == 1 - be_alone);
  // Each started once: one queue wait per class.
  CHECK(sample(body, "msomni_sched_queue_wait_seconds_count{class=\"critical\"}") == 1);
  CHECK(sample(body, "msomni_sched_queue_wait_seconds_count{class=\"best_effort\"}") == 1);
  CHECK(sample(body, "msomni_sched_queue_wait_seconds_count{class=\"regular\"}") == 0);
  CHECK(sample(body, "msomni_sched_preemptions_total{class=\"regular\"}") == 0);
  const auto confidence = sample(body, "msomni_sched_idle_confidence{job=\"crit\"}");
  CHECK(*confidence > 0);
  CHECK(*confidence <= 1);
  // The scheduler's own actors are accounted.
  CHECK(sample(body, "msomni_actor_messages_total{actor=\"scheduler\",message=\"job_submit\"}") == 2);
  CHECK(body.find("msomni_actor_mailbox_depth{actor=\"decision_printer\"}") != std::string::npos);

  // sched-status names the endpoint.
  const std::string info = (dir.path() / "info").string();
  const auto status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info);
  REQUIRE_MESSAGE(status.exit_code == 0, status.output);
  CHECK(parse_json(status.output).at("metrics_address") == e.host + ":" + std::to_string(e.port));
  const auto table = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --scheduler-info " + info);
  CHECK_MESSAGE(table.output.find("metrics http://" + e.host + ":" + std::to_string(e.port) + "/metrics\n") !=
                    std::string::npos,
                table.output);

  // The jobs end: their series go back to 0, and the critical job's forecast series go.
  stop(*crit);
  stop(*be);
  const std::string after = scrape_until(e, [](const std::string& b) {
    return jobs_of_class(b, "critical") == 0 && jobs_of_class(b, "best_effort") == 0 &&
           !sample(b, "msomni_sched_idle_confidence{job=\"crit\"}");
  });
  CHECK(jobs_of_class(after, "critical") == 0);
  CHECK(jobs_of_class(after, "best_effort") == 0);
  CHECK(sample(after, "msomni_sched_gpus{state=\"free\"}") == 8);
  CHECK_FALSE(sample(after, "msomni_sched_idle_confidence{job=\"crit\"}"));
  CHECK_FALSE(sample(after, "msomni_sched_idle_window_seconds{job=\"crit\"}"));
  CHECK(after.find("# TYPE msomni_sched_idle_confidence gauge") != std::string::npos);  // the family stays
  ::kill(sched->pid(), SIGTERM);
  CHECK(sched->read_until("msomni-sched: stopped", 10s));
  CHECK(sched->wait(10s) == 0);
}

TEST_CASE("sched_metrics: msomni-sched with --metrics-port 0 (the default) serves no metrics") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--metrics-port", "0"});
  const std::string info = (dir.path() / "info").string();
  const auto status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info);
  REQUIRE_MESSAGE(status.exit_code == 0, status.output);
  CHECK(parse_json(status.output).at("metrics_address") == "");
  ::kill(sched->pid(), SIGTERM);
  CHECK(sched->read_until("msomni-sched: stopped", 10s));
  CHECK(sched->wait(10s) == 0);
  CHECK(sched->log.find("metrics http://") == std::string::npos);
  // Without the flag: the same.
  temp_dir plain;
  auto quiet = start_scheduler(plain, {});
  const auto plain_status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " +
                                        (plain.path() / "info").string());
  REQUIRE_MESSAGE(plain_status.exit_code == 0, plain_status.output);
  CHECK(parse_json(plain_status.output).at("metrics_address") == "");
  ::kill(quiet->pid(), SIGTERM);
  CHECK(quiet->read_until("msomni-sched: stopped", 10s));
  CHECK(quiet->log.find("metrics http://") == std::string::npos);
}

TEST_CASE("sched_metrics: a --metrics-host that is not an IPv4 address or a bad --metrics-port exits with 2") {
  temp_dir dir;
  const std::string sched = std::string(MSOMNI_SCHED_BINARY) + " --info-file " + (dir.path() / "info").string();
  const auto host = run_command(sched + " --metrics-port auto --metrics-host 10.0.0.1x");
  CHECK(host.exit_code == 2);
  CHECK_MESSAGE(host.output.find("msomni-sched: --metrics-host: \"10.0.0.1x\" is not an IPv4 address") !=
                    std::string::npos,
                host.output);
  CHECK(run_command(sched + " --metrics-port auto --metrics-host ::1").exit_code == 2);
  CHECK(run_command(sched + " --metrics-port auto --metrics-host localhost").exit_code == 2);
  const auto port = run_command(sched + " --metrics-port 70000");
  CHECK(port.exit_code == 2);
  CHECK_MESSAGE(port.output.find("msomni-sched: --metrics-port: 70000 is not in [0, 65535]") != std::string::npos,
                port.output);
  CHECK(run_command(sched + " --metrics-port sometimes").exit_code == 2);
  const auto help = run_command(std::string(MSOMNI_SCHED_BINARY) + " --help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--metrics-port") != std::string::npos);
  CHECK(help.output.find("--metrics-host") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "info"));  // nothing was started
}
