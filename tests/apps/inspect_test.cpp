// msomni inspect against a real job: the live console in a tmux pane (ranks stepping, the
// actors and data views, a video downgrade under a throttled decoder, q exits 0), --once
// --json with the same status keys as `msomni status --json`, --once as plain text, a wrong
// token refused, a finished job and a job with metrics off reported with exit 1; the memory
// view of a quickstart job showing the predictor's forecast for each of its ranks.
#include "core/child_process.hpp"
#include "support/json_lines.hpp"
#include "support/job_probe.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using msomni::testing::run_command;
using msomni::testing::wait_for;

namespace {

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

// The video-heavy job at one decode worker (decoding its videos at full quality costs more
// than a step, so the pipeline downgrades them) with metrics on, long enough to watch.
std::unique_ptr<msomni::child_process> start_job(const msomni::testing::temp_dir& dir, const fs::path& run_dir,
                                                 const std::string& metrics_port) {
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  return std::make_unique<msomni::child_process>(
      MSOMNI_RUN_BINARY,
      std::vector<std::string>{std::string(MSOMNI_SOURCE_DIR) + "/tools/bench_train_job/video-heavy.toml", "--run-dir",
                               run_dir.string(), "--set", "cluster.metrics_port=" + metrics_port, "--set",
                               "io.decode_workers=1", "--set", "training.threads=1", "--set", "training.steps=100000"});
}

// After `msomni stop`: msomni-run ends on its own (a final checkpoint, then its exit code for
// a stopped job), not killed by the wait's timeout.
void ended_after_stop(msomni::child_process& job) {
  const int code = job.wait(180s);
  CHECK_MESSAGE(code < 128, "msomni-run exit " << code);
}

bool job_is_training(const fs::path& run_dir) {
  return fs::exists(run_dir / "control.json") && fs::exists(run_dir / "metrics.jsonl") &&
         !msomni::testing::read_text(run_dir / "metrics.jsonl").empty();
}

// A tmux server of this test's own (its own socket), killed with everything in it at the end.
class tmux_pane {
 public:
  explicit tmux_pane(const std::string& command) : socket_("msomni-test-" + std::to_string(::getpid())) {
    started_ = run_command(tmux("new-session -d -s S -x 120 -y 40 " + quote(command))).exit_code == 0;
    if (started_) socket_path_ = run_command(tmux("display-message -p '#{socket_path}'")).output;
    while (!socket_path_.empty() && socket_path_.back() == '\n') socket_path_.pop_back();
  }
  ~tmux_pane() {
    run_command(tmux("kill-server"));
    std::error_code ec;
    if (!socket_path_.empty()) fs::remove(socket_path_, ec);  // the server leaves its socket file
  }
  bool started() const { return started_; }
  std::string capture() const { return run_command(tmux("capture-pane -p -t S")).output; }
  void keys(const std::string& k) const { run_command(tmux("send-keys -t S " + k)); }

 private:
  static std::string quote(const std::string& s) { return "'" + s + "'"; }
  std::string tmux(const std::string& args) const { return "tmux -L " + socket_ + " " + args; }
  std::string socket_, socket_path_;
  bool started_ = false;
};

// The value in column `name` of the pane's row that starts with `first` (and `second`, when
// given); -1 when absent.
double column_value(const std::string& pane, const std::string& name, const std::string& first,
                    const std::string& second = "") {
  std::istringstream in(pane);
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (std::find(w.begin(), w.end(), name) != w.end()) header = w;
    else if (!header.empty() && w.size() == header.size() && w[0] == first && (second.empty() || w[1] == second))
      for (size_t i = 0; i < w.size(); ++i)
        if (header[i] == name) return std::atof(w[i].c_str());
  }
  return -1;
}

}  // namespace

TEST_CASE("msomni inspect: the live console under tmux, --once --json against status, a wrong token and a finished job") {
  if (run_command("tmux -V").exit_code != 0) MSOMNI_SKIP_TEST("tmux is not installed");
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  auto job = start_job(dir, run_dir, "auto");
  wait_for([&] { return job_is_training(run_dir) || job->exited(); }, 180s);
  REQUIRE(job_is_training(run_dir));
  CHECK(msomni::testing::read_text(run_dir / "control.json").find("metrics_address") != std::string::npos);

  {
    const auto rc_file = dir.path() / "inspect.rc";
    tmux_pane pane("sh -c \"" + cli("inspect --run-dir " + run_dir.string() + " --interval 0.5") + "; echo \\$? > " +
                   rc_file.string() + "; sleep 60\"");
    REQUIRE(pane.started());
    // The header names the job; the ranks view shows rank-0 stepping.
    REQUIRE(wait_for([&] { return pane.capture().find("job video-heavy") != std::string::npos; }, 30s));
    pane.keys("2");
    double first_step = -1;
    REQUIRE(wait_for([&] { return (first_step = column_value(pane.capture(), "STEP", "rank-0")) >= 0; }, 30s));
    CHECK(wait_for([&] { return column_value(pane.capture(), "STEP", "rank-0") > first_step; }, 60s));
    CAPTURE(pane.capture());

    pane.keys("a");
    CHECK(wait_for([&] {
      const auto p = pane.capture();
      return p.find("PROCESS") != std::string::npos && p.find("MSGS/S") != std::string::npos &&
             p.find("orchestrator") != std::string::npos;
    }, 30s));
    pane.keys("o");  // a sort column is marked
    CHECK(wait_for([&] { return pane.capture().find("PROCESS^") != std::string::npos; }, 10s));

    // The data view: the throttled decoder downgrades videos, counted per rank and modality.
    pane.keys("3");
    const std::regex downgrades("downgrades ([0-9]+)");
    std::string data_pane;
    const bool downgraded = wait_for([&] {
      data_pane = pane.capture();
      std::smatch m;
      return std::regex_search(data_pane, m, downgrades) && std::stoll(m[1]) > 0;
    }, 120s);
    CAPTURE(data_pane);
    CHECK(data_pane.find("DOWNGRADES") != std::string::npos);
    CHECK(downgraded);
    CHECK(column_value(data_pane, "DOWNGRADES", "rank-0", "video") > 0);

    pane.keys("e");
    CHECK(wait_for([&] {
      const auto p = pane.capture();
      return p.find("epoch 1, phase running") != std::string::npos && p.find("KIND") != std::string::npos;
    }, 10s));
    pane.keys("q");
    REQUIRE(wait_for([&] { return fs::exists(rc_file) && !msomni::testing::read_text(rc_file).empty(); }, 30s));
    CHECK(msomni::testing::read_text(rc_file) == "0\n");
  }

  // --once --json: the status's keys and its static values, plus metrics, timeline, predictor.
  const auto status_run = run_command(cli("status --json --run-dir " + run_dir.string()));
  const auto once_run = run_command(cli("inspect --once --json --run-dir " + run_dir.string()));
  REQUIRE(status_run.exit_code == 0);
  REQUIRE(once_run.exit_code == 0);
  const auto status = msomni::testing::parse_json(status_run.output);
  const auto inspect = msomni::testing::parse_json(once_run.output);
  for (const auto& [key, value] : status.items()) CHECK_MESSAGE(inspect.contains(key), key);
  for (const auto& [key, value] : inspect.items())
    CHECK_MESSAGE((status.contains(key) || key == "metrics" || key == "timeline" || key == "predictor" || key == "memory"),
                  key);
  for (const char* key : {"world", "target", "total_steps", "grad_accum", "epoch", "phase", "agents"})
    CHECK(inspect.at(key) == status.at(key));
  REQUIRE(inspect.at("ranks").size() == status.at("ranks").size());
  for (size_t i = 0; i < status.at("ranks").size(); ++i)
    for (const char* key : {"name", "node", "pid"}) CHECK(inspect["ranks"][i].at(key) == status["ranks"][i].at(key));
  CHECK(inspect.at("metrics").contains("msomni_job_world_size"));
  CHECK(inspect.at("predictor").contains("windows"));
  CHECK(inspect.at("memory").contains("safety_margin_gb"));

  const auto text = run_command(cli("inspect --once --run-dir " + run_dir.string()));
  CHECK(text.exit_code == 0);
  CHECK(text.output.find("== ranks ==") != std::string::npos);
  CHECK(text.output.find("rank-0") != std::string::npos);

  // A copy of control.json with another token: refused, exit 1.
  const auto wrong = dir.path() / "wrong";
  fs::create_directories(wrong);
  auto control = msomni::testing::parse_json(msomni::testing::read_text(run_dir / "control.json"));
  control["token"] = "not-the-token";
  std::ofstream(wrong / "control.json") << control.dump();
  const auto refused = run_command(cli("inspect --once --run-dir " + wrong.string()));
  CHECK(refused.exit_code == 1);
  CHECK(refused.output.find("refused") != std::string::npos);

  // Usage errors exit 2.
  CHECK(run_command(cli("inspect --once")).exit_code == 2);
  CHECK(run_command(cli("inspect --json --run-dir " + run_dir.string())).exit_code == 2);

  // After the job ends: one line on stderr, exit 1; and where there never was a job too.
  REQUIRE(run_command(cli("stop --run-dir " + run_dir.string())).exit_code == 0);
  ended_after_stop(*job);
  const auto finished = run_command(cli("inspect --once --run-dir " + run_dir.string()));
  CHECK(finished.exit_code == 1);
  CHECK(finished.output.find("does not answer") != std::string::npos);
  const auto nothing = run_command(cli("inspect --once --run-dir " + (dir.path() / "none").string()));
  CHECK(nothing.exit_code == 1);
  CHECK(nothing.output.find("no running job") != std::string::npos);
}

TEST_CASE("msomni inspect: a job with metrics off refuses the inspect request, exit 1") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  auto job = start_job(dir, run_dir, "0");
  wait_for([&] { return job_is_training(run_dir) || job->exited(); }, 180s);
  REQUIRE(job_is_training(run_dir));
  const auto r = run_command(cli("inspect --once --run-dir " + run_dir.string()));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("refused: metrics are off") != std::string::npos);
  REQUIRE(run_command(cli("stop --run-dir " + run_dir.string())).exit_code == 0);
  ended_after_stop(*job);
}

TEST_CASE("msomni inspect: the memory view shows the memory predictor's forecast of each rank of a quickstart job") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  // A budget of 2 GB and a margin of 1 GB: the tiny model's forecast fits with room to spare.
  msomni::child_process job(MSOMNI_RUN_BINARY,
                            {std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml", "--run-dir", run_dir.string(),
                             "--set", "cluster.metrics_port=auto", "--set", "training.steps=100000", "--set",
                             "memory.device_memory_gb=2", "--set", "memory.safety_margin_gb=1"});
  wait_for([&] { return job_is_training(run_dir) || job.exited(); }, 240s);
  REQUIRE(job_is_training(run_dir));

  // The predictor forecasts each rank after its first step sample; the ranks push their compute
  // memory about once a second (zeros until a push after their first step).
  std::string memory;
  const auto shown = [&](const char* column) {
    return column_value(memory, column, "rank-0") > 0 && column_value(memory, column, "rank-1") > 0;
  };
  const bool forecasts = wait_for([&] {
    const auto r = run_command(cli("inspect --once --run-dir " + run_dir.string()));
    const auto at = r.output.find("== memory ==");
    memory = at == std::string::npos ? std::string() : r.output.substr(at);
    return r.exit_code == 0 && shown("FORECAST") && shown("IN_USE") && memory.find("memory_advice") != std::string::npos;
  }, 120s);
  CAPTURE(memory);
  CHECK(forecasts);
  CHECK(memory.find("margin 1.000 GB, device 2.000 GB") != std::string::npos);
  CHECK(memory.find("forecast + margin over the budget: 0 of 2 ranks") != std::string::npos);
  for (const char* rank : {"rank-0", "rank-1"}) {
    CHECK(column_value(memory, "BUDGET", rank) == doctest::Approx(2.0));  // "2.00GB"
    CHECK(column_value(memory, "PEAK", rank) > 0);
    CHECK(column_value(memory, "HEADROOM", rank) > 0);
  }
  CHECK(memory.find("advice: reserve ") != std::string::npos);

  // --once --json carries the settings and the events the view reads.
  const auto once = run_command(cli("inspect --once --json --run-dir " + run_dir.string()));
  REQUIRE(once.exit_code == 0);
  const auto reply = msomni::testing::parse_json(once.output);
  CHECK(reply.at("memory").at("predictor_enabled") == true);
  CHECK(reply.at("memory").at("safety_margin_gb") == 1.0);
  CHECK(reply.at("memory").at("device_memory_gb") == 2.0);
  CHECK_FALSE(reply.at("memory").at("events").empty());
  CHECK(reply.at("metrics").contains("msomni_memory_forecast_bytes"));

  REQUIRE(run_command(cli("stop --run-dir " + run_dir.string())).exit_code == 0);
  ended_after_stop(job);
}
