// msomni-sim's command line and input contract: --help documents every flag the parser
// accepts and every CSV column the reader uses; bad command lines exit with 2; job
// durations are replayed in full (the simulator has no duration cap; only the Alibaba
// invariant test clips durations, to keep its many runs short).
#include "sim_cli.hpp"
#include "sim_engine.hpp"
#include "trace_reader.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

using namespace msomni;
using namespace msomni::sim;

namespace {

// True when `word` occurs in `text` not as a prefix of a longer flag or name.
bool mentions(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    size_t end = at + word.size();
    char next = end < text.size() ? text[end] : ' ';
    char prev = at > 0 ? text[at - 1] : ' ';
    bool joined = std::isalnum(static_cast<unsigned char>(next)) || next == '_' || next == '-';
    bool glued = std::isalnum(static_cast<unsigned char>(prev)) || prev == '_';
    if (!joined && !glued) return true;
  }
  return false;
}

int parse(std::vector<const char*> args, sim_options& o, std::string& err) {
  args.insert(args.begin(), "msomni-sim");
  std::ostringstream out, e;
  int rc = parse_cli(static_cast<int>(args.size()), args.data(), o, out, e);
  err = e.str();
  return rc;
}

}  // namespace

TEST_CASE("msomni-sim --help documents every flag and every CSV column it reads") {
  const std::string help = help_text();
  auto flags = flag_names();
  CHECK(flags.size() >= 30);
  for (const auto& f : flags) {
    CAPTURE(f);
    CHECK(mentions(help, f));
  }
  for (const char* c : columns::itp) CHECK(mentions(help, c));
  for (const char* c : columns::alibaba) CHECK(mentions(help, c));
  for (const char* c : columns::node_list) CHECK(mentions(help, c));
  CHECK(mentions(help, "--help"));
}

TEST_CASE("msomni-sim command line: values land in the options and mistakes exit with 2") {
  sim_options o;
  std::string err;
  CHECK(parse({"--trace", "t.csv", "--policy", "greedy", "--gpus", "48", "--gpus-per-node", "4",
               "--drain-s", "300", "--step-s", "10,20", "--seed", "9", "--critical-slowdown-budget", "0.005"},
              o, err) == -1);
  CHECK(o.trace_path == "t.csv");
  CHECK(o.policy == sched::policy_kind::greedy);
  CHECK(o.gpus == 48);
  CHECK(o.gpus_per_node == 4);
  CHECK(o.sched.drain_period_s == doctest::Approx(300));
  CHECK(o.timeline.step_min_s == doctest::Approx(10));
  CHECK(o.timeline.step_max_s == doctest::Approx(20));
  CHECK(o.seed == 9);
  CHECK(o.sched.critical_slowdown_budget == doctest::Approx(0.005));

  sim_options fresh;
  CHECK(parse({"--help"}, fresh, err) == 0);
  CHECK(parse({"--trace"}, fresh, err) == 2);
  CHECK(parse({"--policy", "fifo", "--trace", "t.csv"}, fresh, err) == 2);
  CHECK(err.find("--policy") != std::string::npos);
  CHECK(parse({"--trace", "t.csv", "--step-s", "60,20"}, fresh, err) == 2);  // MIN > MAX
  CHECK(parse({"--trace", "t.csv", "--critical-slowdown-budget", "1.5"}, fresh, err) == 2);
  CHECK(err.find("--critical-slowdown-budget: 1.5 is not in [0, 1]") != std::string::npos);
  CHECK(parse({"--trace", "t.csv", "--frobnicate", "1"}, fresh, err) == 2);
  CHECK(err.find("--frobnicate") != std::string::npos);
  sim_options no_trace;
  CHECK(parse({"--gpus", "8"}, no_trace, err) == 2);
  CHECK(err.find("--trace is required") != std::string::npos);
}

TEST_CASE("msomni-sim numbers: negative, malformed and out-of-range values exit with 2 naming the flag") {
  const std::vector<std::vector<const char*>> bad = {
      {"--seed", "-1"},           {"--gpus", "-8"},          {"--gpus", "0"},           {"--gpus", "eight"},
      {"--max-jobs", "-1"},       {"--queue-capacity", "0"}, {"--drain-s", "-5"},       {"--idle-threshold", "nan"},
      {"--step-window", "1"},     {"--step-s", "20"},        {"--bubble", "0.1,1.5"},   {"--gpus-per-node", "0x8"},
      {"--reservation-window-s", "0"}};
  for (const auto& args : bad) {
    std::vector<const char*> full{"--trace", "t.csv"};
    full.insert(full.end(), args.begin(), args.end());
    sim_options o;
    std::string err;
    CAPTURE(args[0]);
    CAPTURE(args[1]);
    CHECK(parse(full, o, err) == 2);
    CHECK(err.find(std::string("msomni-sim: ") + args[0] + ": ") != std::string::npos);
  }
  // A [scheduler] key's flag takes exactly the range the config schema allows.
  sim_options edge;
  std::string err;
  CHECK(parse({"--trace", "t.csv", "--idle-threshold", "1", "--step-window", "2", "--gpus", "auto", "--seed",
               "18446744073709551615", "--gpus-per-node", "010"},
              edge, err) == -1);
  CHECK(edge.sched.idle_threshold == doctest::Approx(1));
  CHECK(edge.step_window == 2);
  CHECK(edge.gpus == 0);
  CHECK(edge.seed == UINT64_MAX);
  CHECK(edge.gpus_per_node == 10);  // decimal, not octal
}

TEST_CASE("msomni-sim replays a 60-day job in full: no duration cap") {
  trace tr;
  tr.format = "itp";
  tr.jobs.push_back({"long", 0, 60 * 86400.0, 8, std::nullopt});
  tr.jobs.push_back({"short", 3600, 600, 8, std::nullopt});
  sim_options opt;
  opt.gpus = 8;
  opt.classes = "0,1,0";  // both regular: nobody preempts the long job
  opt.policy = sched::policy_kind::exclusive;
  sim_result r = run_simulation(opt, tr);
  const auto& reg = r.per_class.at("regular");
  CHECK(reg.completed == 2);
  // The run ends at the first reservation-window tick after the last completion.
  CHECK(r.sim_end_s >= 60 * 86400.0 + 600);
  CHECK(r.sim_end_s <= 60 * 86400.0 + 600 + opt.sched.reservation_window_s);
  // long: 60 days; short: waited for it, then ran 600 s.
  CHECK(reg.jct_mean_s == doctest::Approx((60 * 86400.0 + (60 * 86400.0 + 600 - 3600)) / 2));
}
