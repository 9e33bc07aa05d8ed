// The memory journal of the control process: which samples it keeps, the trace lines it writes
// (one per step, in docs/memory_traces.md's format, steps only forward in a file, resume and
// resize marked, later attempts in files of their own), its bounds, and the per-step maxima
// metrics.jsonl lines carry.
#include "memory_journal.hpp"

#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace msomni::orchestrator;
using msomni::msg::batch_features;
using msomni::msg::memory_sample;
using msomni::testing::read_json_lines;

namespace {

std::map<std::string, member_info> members_of(std::initializer_list<std::pair<std::string, member_state>> list,
                                              uint64_t since = 1) {
  std::map<std::string, member_info> out;
  for (const auto& [name, state] : list) {
    member_info m;
    m.name = name;
    m.state = state;
    m.member_since = since;
    out[name] = m;
  }
  return out;
}

memory_sample sample(uint32_t rank, uint64_t step, uint64_t in_use, uint64_t peak, uint32_t world = 2) {
  memory_sample s;
  s.name = "rank-" + std::to_string(rank);
  s.epoch = 1;
  s.rank = rank;
  s.world_size = world;
  s.step = step;
  s.at_ns = 5'000'000 + static_cast<int64_t>(step) * 1'000'000;
  s.in_use_bytes = in_use;
  s.peak_bytes = peak;
  s.batch = {2, 1, 1, 32, 64, 200, 128, 4};
  s.upcoming = {{0, 0, 4, 0, 0, 300, 96, 4}};
  return s;
}

}  // namespace

TEST_CASE("a memory sample from no member, a departed one, another epoch or with impossible numbers is refused") {
  const auto members = members_of({{"rank-0", member_state::active}, {"rank-1", member_state::dead}}, 2);
  auto ok = sample(0, 5, 100, 200);
  ok.epoch = 2;
  CHECK(memory_sample_problem(ok, members, 3, 10).empty());
  auto s = ok;
  s.name = "rank-9";
  CHECK(memory_sample_problem(s, members, 3, 10).find("no member") != std::string::npos);
  s = ok;
  s.name = "rank-1";
  CHECK(memory_sample_problem(s, members, 3, 10).find("no longer a member") != std::string::npos);
  s = ok;
  s.epoch = 1;  // before rank-0 joined
  CHECK(memory_sample_problem(s, members, 3, 10).find("epoch 1") != std::string::npos);
  s.epoch = 4;  // not planned yet
  CHECK_FALSE(memory_sample_problem(s, members, 3, 10).empty());
  s = ok;
  s.rank = 2;
  CHECK(memory_sample_problem(s, members, 3, 10).find("rank index 2") != std::string::npos);
  s = ok;
  s.world_size = 0;
  CHECK_FALSE(memory_sample_problem(s, members, 3, 10).empty());
  s = ok;
  s.step = 0;
  CHECK_FALSE(memory_sample_problem(s, members, 3, 10).empty());
  s = ok;
  s.peak_bytes = 50;
  CHECK(memory_sample_problem(s, members, 3, 10).find("below") != std::string::npos);
  s = ok;
  s.upcoming.resize(11);
  CHECK(memory_sample_problem(s, members, 3, 10).find("11 upcoming") != std::string::npos);
}

TEST_CASE("step samples become trace lines of the documented format, one per step and rank") {
  msomni::testing::temp_dir dir;
  memory_journal j(dir.path() / "memory", 5'000'000, {});
  for (uint64_t step = 1; step <= 3; ++step) {
    CHECK(j.record(sample(0, step, 1000, 1500 + step)));
    CHECK(j.record(sample(1, step, 900, 2000)));
  }
  const auto lines = read_json_lines(dir.path() / "memory" / "rank-0.jsonl");
  REQUIRE(lines.size() == 3);
  CHECK(read_json_lines(dir.path() / "memory" / "rank-1.jsonl").size() == 3);
  const auto& l = lines[1];
  CHECK(l.size() == 8);  // these keys and no others, in this order in the text
  const auto text = msomni::testing::read_text(dir.path() / "memory" / "rank-0.jsonl");
  size_t at = 0;
  for (const char* key : {"\"step\"", "\"t_ms\"", "\"in_use_bytes\"", "\"peak_bytes\"", "\"batch\"", "\"upcoming\"",
                          "\"world_size\"", "\"event\""}) {
    const auto found = text.find(key, at);
    CHECK_MESSAGE(found != std::string::npos, key);
    at = found == std::string::npos ? at : found;
  }
  CHECK(l.at("step") == 2);
  CHECK(l.at("t_ms").get<double>() == doctest::Approx(2.0));
  CHECK(l.at("in_use_bytes") == 1000);
  CHECK(l.at("peak_bytes") == 1502);
  CHECK(l.at("batch").at("samples").at("image") == 2);
  CHECK(l.at("batch").at("samples").at("video") == 1);
  CHECK(l.at("batch").at("samples").at("text") == 1);
  CHECK(l.at("batch").at("image_patches") == 32);
  CHECK(l.at("batch").at("video_patches") == 64);
  CHECK(l.at("batch").at("text_tokens") == 200);
  CHECK(l.at("batch").at("seq_len") == 128);
  CHECK(l.at("batch").at("micro_batch") == 4);
  REQUIRE(l.at("upcoming").size() == 1);
  CHECK(l.at("upcoming")[0].at("text_tokens") == 300);
  CHECK(l.at("world_size") == 2);
  CHECK(l.at("event") == "");

  nlohmann::ordered_json record = {{"step", 3}};
  j.annotate(record, 3);
  CHECK(record.at("memory").at("in_use_bytes") == 1000);  // the largest over the ranks
  CHECK(record.at("memory").at("peak_bytes") == 2000);
  CHECK(record.at("memory").at("ranks") == 2);
  nlohmann::ordered_json unknown = {{"step", 9}};
  j.annotate(unknown, 9);
  CHECK_FALSE(unknown.contains("memory"));
}

TEST_CASE("a resize and a resume are marked, steps only go forward in a file, a later attempt has its own") {
  msomni::testing::temp_dir dir;
  const auto d = dir.path() / "memory";
  memory_journal j(d, 0, {});
  CHECK(j.record(sample(0, 4, 10, 20, 2)));   // a run that resumed at step 3
  CHECK(j.record(sample(0, 5, 10, 20, 3)));   // the world grew
  CHECK(j.record(sample(0, 5, 10, 20, 3)));   // repeated: dropped
  CHECK(j.record(sample(0, 3, 10, 20, 3)));   // late, from before a rollback: dropped
  CHECK(j.dropped() == 2);
  auto lines = read_json_lines(d / "rank-0.jsonl");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].at("event") == "resume");
  CHECK(lines[1].at("event") == "resize");
  CHECK(j.record(sample(0, 3, 10, 20, 3), 2));  // the rollback's attempt
  CHECK(j.record(sample(0, 4, 10, 20, 3), 2));
  lines = read_json_lines(d / "rank-0.attempt-2.jsonl");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].at("event") == "resume");
  CHECK(lines[1].at("event") == "");
  CHECK(read_json_lines(d / "rank-0.jsonl").size() == 2);
}

TEST_CASE("in-step samples go to their own file, at most max_in_step per step, and files stop at max_file_bytes") {
  msomni::testing::temp_dir dir;
  const auto d = dir.path() / "memory";
  memory_journal_settings limits;
  limits.max_in_step = 3;
  memory_journal j(d, 0, limits);
  for (int i = 0; i < 5; ++i) {
    auto s = sample(1, 7, 100 + i, 200);
    s.in_step = true;
    s.host_batch_bytes = 4096;
    CHECK(j.record(s));
  }
  auto next = sample(1, 8, 100, 200);
  next.in_step = true;
  CHECK(j.record(next));
  const auto lines = read_json_lines(d / "rank-1.in_step.jsonl");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].at("step") == 7);
  CHECK(lines[0].at("host_batch_bytes") == 4096);
  CHECK(lines[3].at("step") == 8);
  CHECK(j.dropped() == 2);
  CHECK_FALSE(fs::exists(d / "rank-1.jsonl"));  // in-step samples are no step lines

  memory_journal_settings tiny;
  tiny.max_file_bytes = 600;  // room for one step line, not two
  msomni::testing::temp_dir dir2;
  memory_journal small(dir2.path() / "memory", 0, tiny);
  CHECK(small.record(sample(0, 1, 10, 20)));
  CHECK(small.record(sample(0, 2, 10, 20)));
  CHECK(read_json_lines(dir2.path() / "memory" / "rank-0.jsonl").size() == 1);
  CHECK(small.dropped() == 1);
  CHECK_FALSE(small.failed());
}

TEST_CASE("a journal that cannot write says so and keeps failing") {
  msomni::testing::temp_dir dir;
  const auto d = dir.path() / "memory";
  memory_journal j(d, 0, {});
  fs::remove(d);
  std::ofstream(d) << "a file where the directory was\n";
  CHECK_FALSE(j.record(sample(0, 1, 10, 20)));
  CHECK(j.failed());
  CHECK(j.failure().find("rank-0.jsonl") != std::string::npos);
  CHECK_FALSE(j.record(sample(1, 1, 10, 20)));
}

TEST_CASE("an older run's trace is never appended to: the new run writes a file of its own") {
  msomni::testing::temp_dir dir;
  const auto d = dir.path() / "memory";
  {
    memory_journal first(d, 0, {});
    CHECK(first.record(sample(0, 1, 10, 20)));
    CHECK(first.record(sample(0, 2, 10, 20)));
  }
  memory_journal again(d, 0, {});  // e.g. msomni-run --fresh, which leaves memory/ as it is
  CHECK(again.record(sample(0, 1, 10, 20)));
  CHECK(read_json_lines(d / "rank-0.jsonl").size() == 2);
  const auto lines = read_json_lines(d / "rank-0.run-2.jsonl");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].at("step") == 1);
}

TEST_CASE("the hook counts what it refuses and journals what it accepts") {
  msomni::testing::temp_dir dir;
  memory_hook hook(std::make_unique<memory_journal>(dir.path() / "memory", 0, memory_journal_settings{}), nullptr, nullptr,
                   nullptr);
  const auto members = members_of({{"rank-0", member_state::active}});
  CHECK(hook.take(sample(0, 1, 10, 20), members, 1) == memory_hook::outcome::accepted);
  auto foreign = sample(0, 2, 10, 20);
  foreign.name = "intruder";
  CHECK(hook.take(foreign, members, 1) == memory_hook::outcome::refused);  // dropped, not a failure
  CHECK(hook.refused() == 1);
  CHECK(read_json_lines(dir.path() / "memory" / "rank-0.jsonl").size() == 1);
}
