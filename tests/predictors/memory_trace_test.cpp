// Strict reading of memory traces: a written trace reads back the same, and each kind of
// malformed line is refused with SOURCE:LINE and why.
#include "memory_trace.hpp"
#include "sawtooth_trace.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace msomni::predict;

namespace {

std::string good_line(int64_t step) {
  auto s = msomni::testing::sawtooth_trace(step + 1)[static_cast<size_t>(step)];
  return memory_trace_line(s);
}

std::string error_of(const std::string& text) {
  try {
    parse_memory_trace(text, "rank0.jsonl");
  } catch (const memory_trace_error& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string line, const std::string& from, const std::string& to) {
  const auto at = line.find(from);
  REQUIRE(at != std::string::npos);
  return line.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a written trace reads back the same") {
  auto trace = msomni::testing::sawtooth_trace(5);
  trace[3].event = "resize";
  trace[4].upcoming.clear();
  std::string text;
  for (const auto& s : trace) text += memory_trace_line(s) + "\n";
  const auto back = parse_memory_trace(text, "t.jsonl");
  REQUIRE(back.size() == trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    CHECK(back[i].step == trace[i].step);
    CHECK(back[i].t_ms == trace[i].t_ms);
    CHECK(back[i].in_use_bytes == trace[i].in_use_bytes);
    CHECK(back[i].peak_bytes == trace[i].peak_bytes);
    CHECK(back[i].batch == trace[i].batch);
    CHECK(back[i].upcoming == trace[i].upcoming);
    CHECK(back[i].world_size == trace[i].world_size);
    CHECK(back[i].event == trace[i].event);
  }
  // The last newline is optional.
  CHECK(parse_memory_trace(text.substr(0, text.size() - 1), "t.jsonl").size() == 5);
  CHECK(parse_memory_trace("", "t.jsonl").empty());
}

TEST_CASE("malformed trace lines are refused at their line with the reason") {
  const std::string l0 = good_line(0) + "\n", l1 = good_line(1);
  const auto at2 = [&](const std::string& bad) { return error_of(l0 + good_line(1) + "\n" + bad + "\n"); };
  const std::string base = good_line(2);
  CHECK(at2("{not json").find("rank0.jsonl:3: not JSON") == 0);
  CHECK(at2("").find("rank0.jsonl:3: empty line") == 0);
  CHECK(at2("[1, 2]").find("rank0.jsonl:3: the sample is not an object") == 0);
  CHECK(at2(replaced(base, "\"t_ms\"", "\"time\"")).find("rank0.jsonl:3: the sample has no \"t_ms\"") == 0);
  CHECK(at2(replaced(base, "{\"step\"", "{\"extra\":1,\"step\"")).find("unknown key \"extra\"") != std::string::npos);
  CHECK(at2(replaced(base, "\"world_size\":2", "\"world_size\":2.5")).find("\"world_size\" must be a whole number") !=
        std::string::npos);
  CHECK(at2(replaced(base, "\"world_size\":2", "\"world_size\":0")).find("at least 1") != std::string::npos);
  CHECK(at2(replaced(base, "\"step\":2", "\"step\":1")).find("rank0.jsonl:3: step 1 does not follow step 1") == 0);
  // A resume may go back to its checkpoint's step.
  CHECK(at2(replaced(replaced(base, "\"step\":2", "\"step\":1"), "\"event\":\"\"", "\"event\":\"resume\"")).empty());
  CHECK(at2(replaced(base, "\"event\":\"\"", "\"event\":\"boom\"")).find("\"event\" must be") != std::string::npos);
  CHECK(at2(replaced(base, "\"seq_len\":", "\"seq_len\":-")).find("\"seq_len\" must not be negative") !=
        std::string::npos);
  CHECK(at2(replaced(base, "\"upcoming\":[", "\"upcoming\":[{},")).find("\"upcoming\"[0] has no \"samples\"") !=
        std::string::npos);
  CHECK(at2(replaced(base, "\"video\":", "\"audio\":0,\"video\":")).find("\"batch\".samples has an unknown key") !=
        std::string::npos);
  const std::string peak = "\"peak_bytes\":" + std::to_string(msomni::testing::sawtooth_trace(3)[2].peak_bytes);
  CHECK(at2(replaced(base, peak, "\"peak_bytes\":1")).find("is below \"in_use_bytes\"") != std::string::npos);
  // The line before is fine; the error names the first bad one.
  CHECK(error_of(l0 + "x\n" + l1 + "\n").find("rank0.jsonl:2:") == 0);
}
