// fuyu-tiny trained by 2 rank processes over UCX on generated batches: the loss falls by at
// least half within a bounded number of steps, and the same run twice gives identical
// per-step losses and parameter checksums (bit for bit).
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/wired_processes.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <numeric>

using namespace std::chrono_literals;

namespace {

const char* config_text = R"([job]
name = "two-rank"
[model]
d_model = 64
n_layers = 2
n_heads = 4
d_ff = 256
image_size = 16
patch_size = 8
video_frames = 2
max_seq_len = 64
[[data.sources]]
uri = "synthetic://shapes"
modality = "image"
weight = 0.5
[[data.sources]]
uri = "synthetic://shapes"
modality = "video"
weight = 0.3
[[data.sources]]
uri = "synthetic://text"
modality = "text"
weight = 0.2
[training]
global_batch = 8
micro_batch = 2
grad_accum = 2
steps = 80
lr = 3e-3
seed = 11
[elasticity]
replicas = 2
max_replicas = 2
)";

struct run_output {
  std::vector<double> losses;
  std::string checksum;
};

run_output train_two_ranks(const std::string& config) {
  auto ranks = msomni::testing::start_wired(
      MSOMNI_RANK_BINARY, {{config, "--name", "rank0"}, {config, "--name", "rank1"}});
  run_output out;
  for (;;) {
    auto line = ranks[0]->read_until("", 120s);
    REQUIRE_MESSAGE(line, ranks[0]->log);
    if (const auto step = msomni::testing::step_line_record(*line); step.is_object()) {
      out.losses.push_back(step.at("loss").get<double>());
    } else if (line->rfind("RESULT ", 0) == 0) {
      REQUIRE_MESSAGE(line->rfind("RESULT ok", 0) == 0, *line);
      out.checksum = line->substr(line->find("checksum=") + 9);
      break;
    }
  }
  auto other = ranks[1]->read_until("RESULT ", 60s);
  REQUIRE(other);
  CHECK(other->substr(other->find("checksum=") + 9) == out.checksum);  // replicas agree
  for (auto& r : ranks) r->close_stdin();
  for (auto& r : ranks) CHECK(r->wait(20s) == 0);
  return out;
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + long(from), v.begin() + long(to), 0.0) / double(to - from);
}

}  // namespace

TEST_CASE("two rank processes over UCX halve the loss, deterministically") {
  msomni::testing::temp_dir dir;
  const auto config = dir.write("two_rank.toml", config_text);
  const auto a = train_two_ranks(config);
  REQUIRE(a.losses.size() == 80);
  const double first = mean(a.losses, 0, 5), last = mean(a.losses, 70, 80);
  MESSAGE("loss " << first << " -> " << last << ", checksum " << a.checksum);
  CHECK(last <= 0.5 * first);
  const auto b = train_two_ranks(config);
  CHECK(a.losses == b.losses);
  CHECK(a.checksum == b.checksum);
}
