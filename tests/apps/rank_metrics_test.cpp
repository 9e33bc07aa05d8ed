// The ranks' own metrics, end to end: a real quickstart job of 2 replicas with
// cluster.metrics_port = "auto" serves every family the ranks export (training, data stages,
// actors, transport) on the control process's /metrics, each series labelled with its rank,
// with sane values while it trains; with metrics off, control.json names no endpoint and no
// rank pushes anything.
#include "core/child_process.hpp"
#include "metrics/metric_catalog.hpp"
#include "support/http_get.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// One line of the Prometheus text format: NAME{k="v",...} VALUE.
struct sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<sample> parse_exposition(const std::string& text) {
  std::vector<sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    sample s;
    const auto brace = line.find('{');
    const auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    if (brace != std::string::npos && brace < space) {
      s.name = line.substr(0, brace);
      const auto close = line.rfind('}', space);
      const std::string body = line.substr(brace + 1, close - brace - 1);
      for (size_t at = 0; at < body.size();) {
        const auto eq = body.find("=\"", at);
        if (eq == std::string::npos) break;
        const auto end = body.find('"', eq + 2);  // label values here carry no escaped quotes
        s.labels[body.substr(at, eq - at)] = body.substr(eq + 2, end - eq - 2);
        at = end + 2;  // past the quote and the comma
      }
    } else {
      s.name = line.substr(0, space);
    }
    s.value = std::strtod(line.c_str() + space + 1, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

struct scrape {
  std::vector<sample> samples;

  // The series of `name` whose labels include every one of `want`.
  std::vector<const sample*> find(const std::string& name, const std::map<std::string, std::string>& want) const {
    std::vector<const sample*> hits;
    for (const auto& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : want) all = all && s.labels.count(k) && s.labels.at(k) == v;
      if (all) hits.push_back(&s);
    }
    return hits;
  }
  // The value of the one series of `name` with `want`; NaN when there is none.
  double value(const std::string& name, const std::map<std::string, std::string>& want) const {
    const auto hits = find(name, want);
    return hits.empty() ? std::nan("") : hits.front()->value;
  }
};

uint16_t metrics_port(const fs::path& run_dir) {
  const auto control = msomni::testing::parse_json(msomni::testing::read_text(run_dir / "control.json"));
  const auto address = control.at("metrics_address").get<std::string>();
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

scrape scrape_metrics(uint16_t port) {
  const auto r = msomni::testing::http_request("127.0.0.1", port, "/metrics");
  REQUIRE(r.status == 200);
  return {parse_exposition(r.body)};
}

const std::vector<std::string> ranks{"rank-0", "rank-1"};

// Every rank has finished at least `steps` steps in what the control process holds.
bool ranks_at_least(const scrape& s, const std::map<std::string, double>& steps) {
  for (const auto& [rank, n] : steps)
    if (!(s.value("msomni_rank_steps_total", {{"rank", rank}}) >= n)) return false;
  return true;
}

std::string rank_logs(const fs::path& run_dir) {
  std::string all;
  for (const auto& rank : ranks)
    if (fs::exists(run_dir / "logs" / (rank + ".log"))) all += msomni::testing::read_text(run_dir / "logs" / (rank + ".log"));
  return all;
}

}  // namespace

TEST_CASE("rank_metrics: with metrics on, every family a rank exports is served for each rank of a training job") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // this test process and its children
  msomni::child_process job{MSOMNI_RUN_BINARY,
                            {std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml", "--run-dir", run_dir.string(),
                             "--set", "cluster.metrics_port=auto", "--set", "elasticity.replicas=2", "--set",
                             "training.steps=400"}};
  REQUIRE(msomni::testing::wait_for([&] { return fs::exists(run_dir / "control.json"); }, 120s));
  const uint16_t port = metrics_port(run_dir);
  // cluster.control_host's default: bound to 127.0.0.1 itself, so another loopback address
  // (and so any other interface) finds nothing; only /metrics is served.
  const auto control = msomni::testing::parse_json(msomni::testing::read_text(run_dir / "control.json"));
  CHECK(control.at("metrics_address").get<std::string>() == "127.0.0.1:" + std::to_string(port));
  CHECK_THROWS(msomni::testing::http_request("127.0.0.2", port, "/metrics"));
  CHECK(msomni::testing::http_request("127.0.0.1", port, "/").status == 404);
  CHECK(msomni::testing::http_request("127.0.0.1", port, "/metrics", "POST").status == 405);

  scrape first;
  REQUIRE(msomni::testing::wait_for(
      [&] {
        first = scrape_metrics(port);
        return ranks_at_least(first, {{"rank-0", 2}, {"rank-1", 2}});
      },
      240s));
  std::map<std::string, double> more;
  for (const auto& rank : ranks) more[rank] = first.value("msomni_rank_steps_total", {{"rank", rank}}) + 1;
  scrape second;
  REQUIRE(msomni::testing::wait_for(
      [&] {
        second = scrape_metrics(port);
        return ranks_at_least(second, more);
      },
      120s));

  // Every family the catalog says a rank exports, from both ranks (a histogram by its count).
  for (const auto& f : msomni::metrics::metric_catalog()) {
    if (f.exported_by != "rank" && f.exported_by != "every process") continue;
    const std::string name = std::string(f.name) + (f.kind == msomni::metrics::metric_kind::histogram ? "_count" : "");
    for (const auto& rank : ranks) CHECK_MESSAGE(!second.find(name, {{"rank", rank}}).empty(), name << " of " << rank);
  }

  for (const auto& rank : ranks) {
    CAPTURE(rank);
    const std::map<std::string, std::string> of{{"rank", rank}};
    CHECK(second.value("msomni_rank_steps_total", of) > first.value("msomni_rank_steps_total", of));
    CHECK(second.value("msomni_rank_step", of) >= 1);
    CHECK(second.value("msomni_rank_step_seconds_count", of) >= 2);
    CHECK(std::isfinite(second.value("msomni_rank_loss", of)));
    CHECK(second.value("msomni_rank_loss", of) > 0);
    CHECK(second.value("msomni_rank_tokens_per_second", of) > 0);
    // Its own throughput, readable per rank: a part of the job's, which both ranks share.
    CHECK(second.value("msomni_rank_own_tokens_per_second", of) > 0);
    CHECK(second.value("msomni_rank_own_tokens_per_second", of) < second.value("msomni_rank_tokens_per_second", of));
    const double wait_ratio = second.value("msomni_rank_data_wait_ratio", of);
    CHECK((wait_ratio >= 0 && wait_ratio <= 1));
    CHECK(second.value("msomni_rank_allreduce_bytes_total", of) > 0);
    CHECK(second.value("msomni_rank_allreduce_seconds_total", of) > 0);
    // Both ranks on this host: the same-host path, its areas bounded whatever the model.
    CHECK(second.value("msomni_rank_collective_shared_bytes", of) > 0);
    CHECK(second.value("msomni_rank_collective_shared_bytes", of) <= 4096 + (10 << 20));
    CHECK(second.value("msomni_rank_threads", {{"rank", rank}, {"device", "cpu"}}) >= 1);
    CHECK(second.value("msomni_rank_memory_bytes", {{"rank", rank}, {"kind", "host"}}) > 1e6);
    CHECK(second.value("msomni_checkpoint_verify_failures_total", of) == 0);
    CHECK(second.value("msomni_data_wait_seconds_total", of) >= 0);
    for (const char* stage : {"reader", "decoder", "tensor"}) {
      CAPTURE(stage);
      const std::map<std::string, std::string> st{{"rank", rank}, {"stage", stage}};
      const double fill = second.value("msomni_data_stage_fill", st);
      const double capacity = second.value("msomni_data_stage_capacity", st);
      const double ratio = second.value("msomni_data_stage_fill_ratio", st);
      CHECK(capacity >= 1);
      CHECK((fill >= 0 && fill <= capacity));
      CHECK((ratio >= 0 && ratio <= 1));
      CHECK(second.value("msomni_data_credits_outstanding", st) >= 0);
    }
    // The quickstart's sources are images, videos and captions.
    for (const char* m : {"image", "video", "text"}) {
      CAPTURE(m);
      CHECK(second.value("msomni_data_samples_total", {{"rank", rank}, {"modality", m}}) > 0);
      CHECK(second.value("msomni_data_decode_seconds_total", {{"rank", rank}, {"modality", m}}) > 0);
    }
    CHECK(second.value("msomni_data_downgrades_total", {{"rank", rank}, {"modality", "video"}}) >= 0);
    CHECK(second.find("msomni_data_bad_samples_total", of).size() >= 1);
    // The rank's actors account their messages.
    for (const char* actor : {"worker", "data_reader", "decode_worker", "decode_pool", "data_tensor", "metrics_pusher"}) {
      CAPTURE(actor);
      CHECK(second.value("msomni_actor_messages_total", {{"rank", rank}, {"actor", actor}}) > 0);
    }
    CHECK(second.value("msomni_transport_bytes_total", {{"rank", rank}, {"direction", "sent"}}) > 0);
  }

  CHECK(job.wait(300s) == 0);  // the job trains to its end
  CHECK(rank_logs(run_dir).find("METRICS pushed to the control process") != std::string::npos);
}

TEST_CASE("rank_metrics: with metrics off, control.json names no metrics endpoint and the ranks push nothing") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto r = msomni::testing::run_command("MSOMNI_CACHE_DIR=" + (dir.path() / "cache").string() + " " +
                                              MSOMNI_RUN_BINARY + " " + std::string(MSOMNI_SOURCE_DIR) +
                                              "/configs/quickstart.toml --set training.steps=4 --run-dir " +
                                              run_dir.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  const auto control = msomni::testing::parse_json(msomni::testing::read_text(run_dir / "control.json"));
  CHECK_FALSE(control.contains("metrics_address"));
  const auto logs = rank_logs(run_dir);
  CHECK(logs.find("JOINED") != std::string::npos);  // the logs are there
  CHECK(logs.find("METRICS") == std::string::npos);
}

TEST_CASE("rank_metrics: a node agent whose control.json names the metrics endpoint pushes its own series") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  // The quickstart with both its ranks on one remote node, whose agent heartbeats as the job expects.
  const auto cfg = dir.write("two-on-a-node.toml",
                             msomni::testing::read_text(std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml") +
                                 "\n[[cluster.nodes]]\nname = \"node-a\"\nslots = 2\n");
  msomni::child_process job{MSOMNI_RUN_BINARY,
                            {cfg, "--run-dir", run_dir.string(), "--set", "cluster.metrics_port=auto", "--set",
                             "training.steps=400", "--set", "elasticity.heartbeat_interval_s=1"}};
  REQUIRE(msomni::testing::wait_for([&] { return fs::exists(run_dir / "control.json"); }, 120s));
  const auto control = msomni::testing::parse_json(msomni::testing::read_text(run_dir / "control.json"));
  msomni::child_process agent{MSOMNI_AGENT_BINARY,
                              {"--join", control.at("address").get<std::string>(), "--token-file",
                               (run_dir / "control.json").string(), "--node", "node-a", "--slots", "2", "--heartbeat-s",
                               "1", "--log-dir", (dir.path() / "node-a").string()}};
  const uint16_t port = metrics_port(run_dir);
  // The agent's own series: node="node-a" and no rank label; its ranks' carry both.
  const auto of_agent = [](const scrape& s, const std::string& name) {
    for (const auto* x : s.find(name, {{"node", "node-a"}}))
      if (!x->labels.count("rank")) return x->value;
    return std::nan("");
  };
  scrape s;
  REQUIRE(msomni::testing::wait_for(
      [&] {
        s = scrape_metrics(port);
        return ranks_at_least(s, {{"rank-0", 1}, {"rank-1", 1}}) &&
               of_agent(s, "msomni_transport_bytes_total") > 0;
      },
      240s));
  CHECK(s.value("msomni_actor_messages_total", {{"node", "node-a"}, {"actor", "node_agent"}}) > 0);
  CHECK(of_agent(s, "msomni_actor_messages_total") > 0);
  CHECK(s.value("msomni_rank_steps_total", {{"rank", "rank-0"}, {"node", "node-a"}}) >= 1);
  CHECK(job.wait(300s) == 0);
  CHECK(agent.wait(60s) == 0);  // it ends with the job
}
