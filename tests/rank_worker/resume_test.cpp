// Bit-exact resume across processes: 24 steps straight equal 12 steps + checkpoint + new
// processes + verified load + 12 steps: identical per-step losses and parameter checksums.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/wired_processes.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>

using namespace std::chrono_literals;

namespace {

const char* config_text = R"([job]
name = "resume"
[model]
d_model = 32
n_layers = 2
n_heads = 4
d_ff = 64
image_size = 16
patch_size = 8
video_frames = 2
max_seq_len = 40
[[data.sources]]
uri = "synthetic://shapes"
modality = "image"
[[data.sources]]
uri = "synthetic://shapes"
modality = "video"
[[data.sources]]
uri = "synthetic://text"
modality = "text"
[training]
global_batch = 8
micro_batch = 2
grad_accum = 2
steps = 24
lr = 3e-3
seed = 5
[elasticity]
replicas = 2
max_replicas = 2
[checkpoint]
interval_steps = 6
keep = 2
)";

struct run_output {
  std::map<uint64_t, double> losses;
  std::string checksum;
  bool resumed = false;
};

run_output run(const std::string& config, const std::string& ckpt, int64_t steps, bool resume, int world = 2) {
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < world; ++i) {
    args.push_back({config, "--name", "r" + std::to_string(i), "--ckpt-dir", ckpt, "--steps", std::to_string(steps)});
    if (resume) args.back().push_back("--resume");
  }
  auto ranks = msomni::testing::start_wired(MSOMNI_RANK_BINARY, args);
  run_output out;
  for (;;) {
    auto line = ranks[0]->read_until("", 120s);
    REQUIRE_MESSAGE(line, ranks[0]->log);
    if (line->rfind("RESUMED ", 0) == 0) out.resumed = true;
    if (const auto step = msomni::testing::step_line_record(*line); step.is_object()) {
      out.losses[step.at("step").get<uint64_t>()] = step.at("loss").get<double>();
    } else if (line->rfind("RESULT ", 0) == 0) {
      REQUIRE_MESSAGE(line->rfind("RESULT ok", 0) == 0, *line);
      out.checksum = line->substr(line->find("checksum=") + 9);
      break;
    }
  }
  for (size_t i = 1; i < ranks.size(); ++i) REQUIRE(ranks[i]->read_until("RESULT ok", 60s));
  for (auto& r : ranks) r->close_stdin();
  for (auto& r : ranks) CHECK(r->wait(20s) == 0);
  return out;
}

}  // namespace

TEST_CASE("N steps straight equal N/2 + checkpoint + new processes + load + N/2, bit for bit") {
  msomni::testing::temp_dir dir;
  const auto config = dir.write("resume.toml", config_text);
  const auto straight = run(config, (dir.path() / "a").string(), 24, false);
  const auto first = run(config, (dir.path() / "b").string(), 12, false);
  const auto second = run(config, (dir.path() / "b").string(), 24, true);
  REQUIRE(straight.losses.size() == 24);
  CHECK(first.losses.size() == 12);
  CHECK(second.resumed);
  REQUIRE(second.losses.size() == 12);
  for (const auto& [step, loss] : second.losses) {
    CAPTURE(step);
    CHECK(loss == straight.losses.at(step));
  }
  for (const auto& [step, loss] : first.losses) CHECK(loss == straight.losses.at(step));
  CHECK(second.checksum == straight.checksum);
  MESSAGE("resumed at step 12; final checksum " << second.checksum << " matches the straight run");
}

TEST_CASE("a checkpoint of 2 ranks resumes on 3 ranks without a loss spike") {
  msomni::testing::temp_dir dir;
  const auto config = dir.write("resume.toml", config_text);
  const auto two = run(config, (dir.path() / "c").string(), 12, false);
  const auto three = run(config, (dir.path() / "c").string(), 18, true, 3);
  CHECK(three.resumed);
  REQUIRE(three.losses.size() == 6);
  const double before = two.losses.at(12), after = three.losses.at(13);
  MESSAGE("loss at step 12 (2 ranks) " << before << ", step 13 (3 ranks) " << after);
  CHECK(after < 1.5 * before);
  CHECK(three.losses.at(18) < two.losses.at(1));
}
