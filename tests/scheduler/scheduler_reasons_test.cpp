// The numbers in the core's reasons: every decision and hold carries what it compared, in its
// text and by name (command::figures), from one record. A critical host's lending says its idle
// share against idle_threshold, its confidence against min_confidence and why the confidence is
// low (step-time variance, or too few samples), and what its guests cost it against its
// slowdown budget; colocate and evict_guest say the same.
#include "scheduler_core.hpp"
#include "step_predictor.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace msomni::sched;
namespace predict = msomni::predict;

namespace {

// 16 GPUs, omni without the critical reserve.
scheduler_core make() {
  scheduler_params prm;
  prm.policy = policy_kind::omni;
  prm.critical_peak_memory_s = 0;
  return scheduler_core(topology::uniform(16, 4, 2), prm);
}

job_request req(std::string id, job_class c, uint32_t gpus) { return {std::move(id), c, gpus}; }
// A job of one replica: it runs whole or not at all (no elastic start, no shrink).
job_request whole(std::string id, job_class c, uint32_t gpus) { return {std::move(id), c, gpus, gpus}; }

// The number named `name` in `numbers`; NaN (every comparison fails) when it is not there.
double figure_of(const figures& numbers, const std::string& name) {
  for (const auto& [n, value] : numbers)
    if (n == name) return value;
  return std::nan("");
}

bool has(const figures& numbers, const std::string& name) { return !std::isnan(figure_of(numbers, name)); }

const command* find_cmd(const std::vector<command>& cs, command_kind k, const std::string& job) {
  for (const auto& c : cs)
    if (c.kind == k && c.job == job) return &c;
  return nullptr;
}

// The forecast the live shell gives the core for `steps` (step time, data wait) of a job: the
// predictor's, with what its confidence came from.
host_forecast forecast_of(const std::vector<std::pair<double, double>>& steps) {
  predict::step_predictor p(predict::predictor_params{});
  for (const auto& [step_s, wait_s] : steps) p.observe("crit", {step_s, wait_s, 0, 0});
  return host_forecast_of(p.forecast("crit", 1800), p.stats("crit"), p.params().warmup_steps);
}

// The numbers a reason shows in its text: each one, as number_text() writes it, is in the text
// (bytes are shown in GB and the budget in percent: those are checked where they are used).
void check_numbers_in_text(const command& c) {
  CAPTURE(c.reason);
  for (const auto& [name, value] : c.figures) {
    if (name.find("_bytes") != std::string::npos || name == "slowdown_budget") continue;
    CAPTURE(name);
    CHECK(c.reason.find(number_text(value)) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a host whose step times vary lends nothing and says the variance caps its confidence") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(whole("be", job_class::best_effort, 16), 1);  // waits: too big for what is free
  // 200 steps alternating 0.1 s and 3.9 s, half of each waiting for data: idle share 0.5, but
  // the step time's coefficient of variation is 0.95.
  std::vector<std::pair<double, double>> steps;
  for (int i = 0; i < 200; ++i) steps.push_back(i % 2 ? std::pair{3.9, 1.95} : std::pair{0.1, 0.05});
  const host_forecast f = forecast_of(steps);
  REQUIRE(f.confidence < 0.1);
  s.set_forecast("crit", f);
  const auto cs = s.window(1800);
  const command* h = find_cmd(cs, command_kind::hold, "crit");
  REQUIRE(h);
  CHECK(h->reason.rfind("low_confidence: crit's forecast confidence ", 0) == 0);
  CHECK(h->reason.find("its step times vary too much (step-time cv 0.95 caps the confidence at 0.05 whatever the "
                       "samples; 200 samples, 30 for full confidence)") != std::string::npos);
  CHECK(h->reason.find("yet") == std::string::npos);  // waiting does not help
  CHECK(figure_of(h->figures, "confidence") == doctest::Approx(f.confidence));
  CHECK(figure_of(h->figures, "confidence") < figure_of(h->figures, "min_confidence"));
  CHECK(figure_of(h->figures, "step_time_cv") == doctest::Approx(0.95));
  CHECK(figure_of(h->figures, "confidence_cap") < figure_of(h->figures, "min_confidence"));
  CHECK(figure_of(h->figures, "samples") == 200);
  check_numbers_in_text(*h);
  // sched-status's view of it: the same reason from the core's current state.
  const hold_note note = s.lending_hold_note("crit");
  CHECK(note.reason == hold_reason::low_confidence);
  CHECK(explain(note) == h->reason);
  CHECK(figures_of(note) == h->figures);
}

TEST_CASE("a host with too few step samples says how many it has and how many it needs") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(whole("be", job_class::best_effort, 16), 1);
  // 6 steady steps: confidence 6 / 30 = 0.2; at cv 0 it reaches min_confidence 0.5 at 15.
  const host_forecast f = forecast_of(std::vector<std::pair<double, double>>(6, {1.0, 0.5}));
  s.set_forecast("crit", f);
  const command* h = nullptr;
  const auto cs = s.window(1800);
  h = find_cmd(cs, command_kind::hold, "crit");
  REQUIRE(h);
  CHECK(h->reason ==
        "low_confidence: crit's forecast confidence 0.2 is under min_confidence 0.5: too few step samples yet (6 of "
        "the 15 it needs at its step-time cv 0; 30 for full confidence): it lends nothing to guests");
  CHECK(figure_of(h->figures, "samples") < figure_of(h->figures, "samples_needed"));
  CHECK(figure_of(h->figures, "samples_needed") <= figure_of(h->figures, "warmup_samples"));
  check_numbers_in_text(*h);
}

TEST_CASE("colocate gives the idle share, the confidence and the budget it passed, and what is lent") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(req("fill", job_class::best_effort, 8), 1);  // the other 8 GPUs: guests go to crit
  s.submit(req("be", job_class::best_effort, 2), 2);
  const host_forecast f = forecast_of(std::vector<std::pair<double, double>>(200, {1.0, 0.5}));
  s.set_forecast("crit", f);
  s.report_guest_delay("crit", 3, 1800);
  const auto cs = s.window(1800);
  const command* c = find_cmd(cs, command_kind::colocate, "be");
  REQUIRE(c);
  CHECK(c->reason.rfind("host's predicted idle share passes the threshold: idle share 0.5 (next window 0.5, over "
                        "its rhythm 0.5) passes idle_threshold 0.35; confidence 1 >= min_confidence 0.5",
                        0) == 0);
  CHECK(c->reason.find("guests cost it 3 s of its 18 s slowdown budget (1% of its 1800 s run)") != std::string::npos);
  CHECK(figure_of(c->figures, "idle_share") >= figure_of(c->figures, "idle_threshold"));
  CHECK(figure_of(c->figures, "confidence") >= figure_of(c->figures, "min_confidence"));
  CHECK(figure_of(c->figures, "guest_delay_s") <= figure_of(c->figures, "slowdown_budget_s"));
  CHECK(figure_of(c->figures, "slowdown_budget_s") ==
        doctest::Approx(figure_of(c->figures, "slowdown_budget") * figure_of(c->figures, "run_s")));
  CHECK(figure_of(c->figures, "lent_share") == doctest::Approx(c->share));
  check_numbers_in_text(*c);
  // The guest keeps why it was placed (sched-status shows it).
  CHECK(s.find("be")->placed.text == c->reason);
}

TEST_CASE("evict_guest gives the comparison that failed: idle share under the threshold, or the budget") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(req("fill", job_class::best_effort, 8), 1);
  s.submit(req("be", job_class::best_effort, 2), 2);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  REQUIRE(find_cmd(s.window(1800), command_kind::colocate, "be"));
  s.set_forecast("crit", {0.20, 0.1, 0.2, 1.0, 0.0, 0.25});
  auto cs = s.window(3600);
  const command* e = find_cmd(cs, command_kind::evict_guest, "be");
  REQUIRE(e);
  CHECK(e->reason == "crit's predicted idle share 0.25 (next window 0.2, over its rhythm 0.25) is under idle_threshold 0.35");
  CHECK(figure_of(e->figures, "idle_share") < figure_of(e->figures, "idle_threshold"));
  check_numbers_in_text(*e);
  // Back above the threshold, then past the budget: 60 s lost of a 5400 s run (54 s allowed).
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  REQUIRE(find_cmd(s.window(4000), command_kind::colocate, "be"));
  s.report_guest_delay("crit", 60, 5400);
  cs = s.window(5400);
  e = find_cmd(cs, command_kind::evict_guest, "be");
  REQUIRE(e);
  CHECK(figure_of(e->figures, "guest_delay_s") > figure_of(e->figures, "slowdown_budget_s"));
  CHECK(figure_of(e->figures, "slowdown_budget_s") == doctest::Approx(54));
  check_numbers_in_text(*e);
}

TEST_CASE("a guest with free GPUs and nobody waiting leaves with the free GPUs against its need") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(req("fill", job_class::best_effort, 8), 1);
  s.submit(req("be", job_class::best_effort, 2), 2);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  REQUIRE(find_cmd(s.window(1800), command_kind::colocate, "be"));
  s.finished("fill", 1900);
  const auto cs = s.window(3600);
  const command* e = find_cmd(cs, command_kind::evict_guest, "be");
  REQUIRE(e);
  CHECK(e->reason == "free GPUs: run alone (8 free, it needs 2; nobody waits)");
  CHECK(figure_of(e->figures, "gpus_free") >= figure_of(e->figures, "gpus_wanted"));
}

TEST_CASE("every decision and hold of a busy day carries the numbers it compared, shown in its text") {
  auto s = make();
  std::vector<command> all;
  const auto take = [&](std::vector<command> cs) { all.insert(all.end(), cs.begin(), cs.end()); };
  take(s.submit(whole("reg", job_class::regular, 12), 0));
  take(s.submit(req("be", job_class::best_effort, 4), 1));
  take(s.submit(req("crit", job_class::critical, 8), 2));  // waits for reg's run window
  take(s.submit(req("big", job_class::regular, 32), 3));   // refused: more than the cluster
  take(s.expire(2 + s.params().min_run_window_s));         // reg gets its notice
  take(s.expire(2 + s.params().min_run_window_s + s.params().drain_period_s));  // forced
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  take(s.submit(req("late", job_class::best_effort, 2), 9000));
  take(s.window(9000));
  take(s.finished("crit", 10000));
  REQUIRE(find_cmd(all, command_kind::preempt, "reg"));
  REQUIRE(find_cmd(all, command_kind::force_release, "reg"));
  REQUIRE(find_cmd(all, command_kind::reject, "big"));
  REQUIRE(find_cmd(all, command_kind::start, "crit"));
  size_t checked = 0;
  for (const auto& c : all) {
    CAPTURE(to_string(c.kind));
    CAPTURE(c.job);
    CAPTURE(c.reason);
    if (c.reason == "host finished" || c.reason == "duplicate job id") continue;  // nothing was compared
    CHECK_FALSE(c.figures.empty());
    check_numbers_in_text(c);
    ++checked;
  }
  CHECK(checked >= 8);
  const command* refused = find_cmd(all, command_kind::reject, "big");
  CHECK(figure_of(refused->figures, "gpus_wanted") > figure_of(refused->figures, "gpus_total"));
  const command* preempt = find_cmd(all, command_kind::preempt, "reg");
  CHECK(figure_of(preempt->figures, "run_s") >= figure_of(preempt->figures, "min_run_window_s"));
  CHECK(has(preempt->figures, "drain_s"));
  const command* crit = find_cmd(all, command_kind::start, "crit");
  CHECK(figure_of(crit->figures, "gpus_wanted") <= figure_of(crit->figures, "gpus_free"));
}

TEST_CASE("a host's low confidence is logged again when its cause changes, not while it lasts") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(whole("be", job_class::best_effort, 16), 1);
  const auto holds = [](const std::vector<command>& cs) {
    std::vector<std::string> out;
    for (const auto& c : cs)
      if (c.kind == command_kind::hold && c.job == "crit") out.push_back(c.reason);
    return out;
  };
  auto h = holds(s.window(1800));  // no step reports yet
  REQUIRE(h.size() == 1);
  CHECK(h[0].find("crit has no forecast") != std::string::npos);
  std::vector<std::pair<double, double>> noisy;
  for (int i = 0; i < 40; ++i) noisy.push_back(i % 2 ? std::pair{1.9, 0.95} : std::pair{0.1, 0.05});
  s.set_forecast("crit", forecast_of(noisy));
  h = holds(s.window(3600));  // the same reason, another cause: said again
  REQUIRE(h.size() == 1);
  CHECK(h[0].find("its step times vary too much (step-time cv 0.9 caps the confidence at 0.1") != std::string::npos);
  CHECK(holds(s.window(5400)).empty());  // unchanged: not again
}
