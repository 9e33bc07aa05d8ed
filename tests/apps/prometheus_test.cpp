// A real Prometheus server (/usr/bin/prometheus) scrapes a real msomni job and msomni-sched
// on loopback, and the test reads what it stored through Prometheus's HTTP API: every
// family of the metric catalog is there (histograms as _bucket, _sum and _count), and so is
// every name the Grafana dashboard queries, whose expressions all evaluate; the values are
// sane (steps counting up, the world size, stage fill within capacity, the scheduler's GPUs),
// and follow the job: a scale-down to 2 replicas shows as world size 2, a rank killed with
// SIGKILL as one more recovery. The job trains under `msomni job`, so msomni-sched has a
// running job with an idle-window forecast.
#include "core/child_process.hpp"
#include "core/process.hpp"
#include "grafana_dashboard.hpp"
#include "support/http_get.hpp"
#include "support/job_probe.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <string>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::child_process;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::temp_dir;
using msomni::testing::wait_for;
using nlohmann::json;

namespace {

const char* const prometheus_binary = "/usr/bin/prometheus";
const std::string job_name = "promjob";

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

// A port nobody listens on now (the kernel's pick for an ephemeral bind).
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  REQUIRE(ok);
  return ntohs(a.sin_port);
}

std::string url_encoded(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// "HOST:PORT" of a /metrics endpoint.
struct endpoint {
  std::string host;
  uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};
std::optional<endpoint> endpoint_of(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  return endpoint{address.substr(0, colon), static_cast<uint16_t>(std::stoi(address.substr(colon + 1)))};
}

// Prometheus on 127.0.0.1 with its own config and storage in a temporary directory, scraping
// `targets` (scrape job name -> HOST:PORT) every second with the scraped job labels kept.
// Its log goes to the directory; it is stopped and the directory removed when it goes.
class prometheus_server {
 public:
  explicit prometheus_server(const std::vector<std::pair<std::string, std::string>>& targets) : port_(free_port()) {
    std::string config =
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n";
    for (const auto& [name, address] : targets)
      config += "  - job_name: " + name + "\n    honor_labels: true\n    static_configs:\n      - targets: ['" +
                address + "']\n";
    const auto config_file = dir_.write("prometheus.yml", config);
    msomni::process::spawn_options o;
    o.in = msomni::process::stream::null();
    o.out = msomni::process::stream::file(log_path());
    o.err = msomni::process::stream::same_as_stdout();
    o.parent_death_signal = SIGKILL;
    server_ = msomni::process::spawn(prometheus_binary,
                                     {"--config.file=" + config_file,
                                      "--storage.tsdb.path=" + (dir_.path() / "data").string(),
                                      "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                      "--web.console.templates=" + (dir_.path() / "consoles").string(),
                                      "--web.console.libraries=" + (dir_.path() / "console_libraries").string()},
                                     o);
  }
  ~prometheus_server() {
    server_.signal(SIGTERM);
    if (!server_.wait_for(30s)) server_.signal(SIGKILL);
  }
  prometheus_server(const prometheus_server&) = delete;
  prometheus_server& operator=(const prometheus_server&) = delete;

  std::string log_path() const { return (dir_.path() / "prometheus.log").string(); }
  std::string log() const { return read_text(log_path()); }
  bool running() { return !server_.poll().has_value(); }

  bool ready() {
    try {
      return msomni::testing::http_request("127.0.0.1", port_, "/-/ready").status == 200;
    } catch (const std::exception&) {
      return false;
    }
  }

  // GET /api/v1/PATH; the parsed reply, or null when it did not answer with JSON.
  json api(const std::string& path) {
    try {
      return json::parse(msomni::testing::http_request("127.0.0.1", port_, "/api/v1/" + path).body, nullptr, false);
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  // An instant query's reply (status, data.result).
  json query(const std::string& promql) { return api("query?query=" + url_encoded(promql)); }
  // The instant vector's samples: labels and value.
  std::vector<std::pair<json, double>> samples(const std::string& promql) {
    std::vector<std::pair<json, double>> out;
    const auto r = query(promql);
    if (!r.is_object() || r.value("status", "") != "success") return out;
    const auto& data = r.at("data");
    if (data.value("resultType", "") == "scalar") {
      out.emplace_back(json::object(), std::stod(data.at("result")[1].get<std::string>()));
      return out;
    }
    for (const auto& s : data.at("result"))
      out.emplace_back(s.at("metric"), std::stod(s.at("value")[1].get<std::string>()));
    return out;
  }
  // The single value of a query that yields one sample; nullopt otherwise.
  std::optional<double> value(const std::string& promql) {
    const auto s = samples(promql);
    if (s.size() != 1) return std::nullopt;
    return s[0].second;
  }
  // Every metric name Prometheus holds.
  std::set<std::string> names() {
    std::set<std::string> out;
    const auto r = api("label/__name__/values");
    if (r.is_object() && r.value("status", "") == "success")
      for (const auto& n : r.at("data")) out.insert(n.get<std::string>());
    return out;
  }

 private:
  temp_dir dir_;
  uint16_t port_;
  msomni::process::child server_;
};

// The names a family is stored under: a histogram as its three series.
std::vector<std::string> stored_names(const msomni::metrics::family_spec& f) {
  const std::string name(f.name);
  if (f.kind != msomni::metrics::metric_kind::histogram) return {name};
  return {name + "_bucket", name + "_sum", name + "_count"};
}

std::vector<std::string> missing_families(const std::set<std::string>& stored) {
  std::vector<std::string> missing;
  for (const auto& f : msomni::metrics::metric_catalog())
    for (const auto& n : stored_names(f))
      if (!stored.count(n)) missing.push_back(n);
  return missing;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The job: the quickstart on 3 replicas (a batch that 3, 2 and 1 replicas split evenly), long
// enough to outlast the test, with checkpoints often enough that a recovery has one near.
std::vector<std::string> job_command(const fs::path& run_dir) {
  return {MSOMNI_RUN_BINARY,
          std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml",
          "--set", "job.name=" + job_name,
          "--set", "cluster.metrics_port=auto",
          "--set", "elasticity.replicas=3",
          "--set", "elasticity.max_replicas=3",
          "--set", "elasticity.min_replicas=1",
          "--set", "training.global_batch=12",
          "--set", "training.micro_batch=2",
          "--set", "training.grad_accum=2",
          "--set", "training.steps=1000000",
          "--set", "checkpoint.interval_steps=20",
          "--run-dir", run_dir.string()};
}

}  // namespace

TEST_CASE("prometheus: a real server scrapes a job and msomni-sched, every catalog family, sane values, scale-down and recovery") {
  if (!fs::exists(prometheus_binary)) MSOMNI_SKIP_TEST(std::string(prometheus_binary) + " is not installed");
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // this test process and its children

  // msomni-sched with its own /metrics.
  const std::string info = (dir.path() / "info").string();
  child_process sched(MSOMNI_SCHED_BINARY, {"--gpus", "8", "--info-file", info, "--metrics-port", "auto"});
  const auto sched_line = sched.read_until("msomni-sched: metrics http://", 20s);
  REQUIRE_MESSAGE(sched_line, "msomni-sched printed no metrics address: " << sched.log);
  std::smatch m;
  REQUIRE(std::regex_search(*sched_line, m, std::regex(R"(http://([0-9.]+:[0-9]+)/metrics)")));
  const auto sched_metrics = endpoint_of(m[1].str());
  REQUIRE(sched_metrics);
  if (sched.log.find("msomni-sched: 8 GPUs") == std::string::npos)
    REQUIRE_MESSAGE(sched.read_until("msomni-sched: 8 GPUs", 20s), sched.log);

  // The job, as a job of msomni-sched.
  const auto run_dir = dir.path() / "run";
  std::vector<std::string> job_args{"job",      "--scheduler-info", info, "--id", job_name, "--class", "regular",
                                    "--gpus",   "3",                "--run-dir", run_dir.string(), "--"};
  const auto command = job_command(run_dir);
  job_args.insert(job_args.end(), command.begin(), command.end());
  child_process job(MSOMNI_CLI_BINARY, job_args);
  REQUIRE_MESSAGE(job.read_until("msomni job " + job_name + ": started", 30s), job.log);
  std::string job_address;
  REQUIRE_MESSAGE(wait_for(
                      [&] {
                        const auto control = json::parse(read_text(run_dir / "control.json"), nullptr, false);
                        if (!control.is_object() || !control.contains("metrics_address")) return false;
                        job_address = control.at("metrics_address").get<std::string>();
                        return true;
                      },
                      120s),
                  "no metrics_address in control.json");
  const auto job_metrics = endpoint_of(job_address);
  REQUIRE(job_metrics);

  prometheus_server prom({{"msomni-job", job_metrics->text()}, {"msomni-sched", sched_metrics->text()}});
  CAPTURE(prom.log_path());
  const bool ready = wait_for([&] { return prom.ready() || !prom.running(); }, 60s) && prom.running();
  REQUIRE_MESSAGE(ready, prom.log());
  // Both targets up, and all three ranks training (their step series are there).
  REQUIRE_MESSAGE(wait_for([&] { return prom.value("sum(up)") == 2.0; }, 60s), prom.log());
  const auto rank_steps = "msomni_rank_step{job=\"" + job_name + "\"}";
  REQUIRE_MESSAGE(wait_for([&] { return prom.samples(rank_steps + " > 0").size() == 3; }, 180s),
                  "three ranks never reported a step");

  // Every family of the catalog, including those this scenario never moves from 0.
  std::set<std::string> stored;
  wait_for(
      [&] {
        stored = prom.names();
        return missing_families(stored).empty();
      },
      60s);
  const auto missing = missing_families(stored);
  CHECK_MESSAGE(missing.empty(), "families not scraped: " << joined(missing));
  // Every name the dashboard queries was scraped.
  const auto dashboard = msomni::testing::load_dashboard();
  for (const auto& n : msomni::testing::dashboard_metric_names(dashboard))
    CHECK_MESSAGE(stored.count(n), "the dashboard's " << n << " was not scraped");

  // Sane values. The job's series carry its job.name (honor_labels), and each rank its name.
  const std::string sel = "{job=\"" + job_name + "\"}";
  for (const auto& [labels, v] : prom.samples(rank_steps)) CHECK(labels.value("rank", "").rfind("rank-", 0) == 0);
  CHECK(prom.value("msomni_job_world_size" + sel) == 3.0);
  CHECK(prom.value("msomni_job_target_world_size" + sel) == 3.0);
  const auto steps_before = prom.value("sum(msomni_rank_steps_total" + sel + ")");
  REQUIRE(steps_before);
  CHECK(wait_for([&] { return prom.value("sum(msomni_rank_steps_total" + sel + ")").value_or(0) > *steps_before; },
                 60s));
  const auto fill = prom.samples("msomni_data_stage_fill_ratio" + sel);
  CHECK(fill.size() >= 3);
  for (const auto& [labels, v] : fill) {
    CAPTURE(labels.dump());
    CHECK(v >= 0);
    CHECK(v <= 1);
  }
  const auto headroom = prom.samples("msomni_data_stage_capacity" + sel + " - msomni_data_stage_fill" + sel);
  CHECK(headroom.size() == fill.size());
  for (const auto& [labels, v] : headroom) {
    CAPTURE(labels.dump());
    CHECK(v >= 0);
  }
  CHECK(prom.value("sum(rate(msomni_data_samples_total" + sel + "[1m]))").value_or(0) > 0);
  CHECK(prom.value("sum(msomni_sched_gpus)") == 8.0);
  CHECK(prom.value("sum(msomni_sched_jobs{phase=\"running\"})") == 1.0);
  CHECK(prom.value("sum(msomni_metrics_sources" + sel + ")").value_or(0) >= 3);

  // A scale-down to 2 replicas: the world size series follows.
  auto r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 2"));
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(wait_for([&] { return prom.value("msomni_job_world_size" + sel) == 2.0; }, 120s),
                read_text(run_dir / "events.jsonl"));
  CHECK(prom.value("msomni_job_target_world_size" + sel) == 2.0);
  CHECK(prom.value("sum(msomni_elastic_events_total{job=\"" + job_name + "\", kind=\"scale_down\"})").value_or(0) >= 1);

  // A rank killed with SIGKILL: one more recovery.
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  const auto recoveries = prom.value("max(msomni_recoveries_total" + sel + ")");
  REQUIRE(recoveries);
  pid_t victim = 0;
  {
    const auto status = json::parse(run_command(cli("status --json --run-dir " + run_dir.string())).output, nullptr, false);
    REQUIRE(status.is_object());
    for (const auto& rank : status.value("ranks", json::array()))
      if (rank.value("state", "") != "left" && rank.value("name", "") != "rank-0" && rank.value("pid", 0) > 0)
        victim = rank.at("pid").get<pid_t>();
  }
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  CHECK_MESSAGE(wait_for([&] { return prom.value("max(msomni_recoveries_total" + sel + ")").value_or(0) > *recoveries; }, 180s),
                read_text(run_dir / "events.jsonl"));
  // Exactly one (the series may miss a scrape while the replacement's source joins).
  CHECK(wait_for([&] { return prom.value("max(msomni_recoveries_total" + sel + ")") == *recoveries + 1; }, 30s));

  // Every expression of the dashboard evaluates on the real data; each panel's shows some.
  for (const auto& e : msomni::testing::dashboard_exprs(dashboard)) {
    auto expr = std::regex_replace(e.expr, std::regex(R"(\$__rate_interval)"), "1m");
    expr = std::regex_replace(expr, std::regex(R"(\$job)"), job_name);
    expr = std::regex_replace(expr, std::regex(R"(\$rank)"), ".*");
    CAPTURE(e.where);
    CAPTURE(expr);
    const auto reply = prom.query(expr);
    REQUIRE(reply.is_object());
    CHECK(reply.value("status", "") == "success");
    if (e.panel || e.where.rfind("variable", 0) == 0)
      CHECK_FALSE(reply.value("data", json::object()).value("result", json::array()).empty());
  }

  // Stop the job (a final checkpoint), then msomni-sched.
  // The recovery may still be growing the job back: stop is refused until it is steady.
  wait_for(
      [&] {
        r = run_command(cli("stop --run-dir " + run_dir.string()));
        return r.exit_code == 0 || r.output.find("waits for a steady state") == std::string::npos;
      },
      120s);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(job.read_until("msomni job " + job_name + ": stopped", 120s), job.log);
  CHECK(job.wait(30s) == 5);  // stopped with a final checkpoint: resumable, not finished
  ::kill(sched.pid(), SIGTERM);
  CHECK(sched.read_until("msomni-sched: stopped", 20s));
  sched.wait(20s);
}
