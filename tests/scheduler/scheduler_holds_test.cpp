// Hold reasons: why a job waits or a shrunk job does not grow, why free GPUs stay unused, why
// a critical host lends nothing. Each is logged once per change of reason, never per pass,
// and is not counted as a decision.
#include "scheduler_core.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace msomni::sched;

namespace {

// 2 switches x 2 nodes x 4 GPUs; omni's reserve remembers 6 h of critical demand at 1x.
scheduler_core make(policy_kind p = policy_kind::omni) {
  scheduler_params prm;
  prm.policy = p;
  prm.queue_capacity = 2;
  prm.critical_peak_memory_s = 21600;
  prm.critical_reserve_factor = 1;
  return scheduler_core(topology::uniform(16, 4, 2), prm);
}

job_request req(std::string id, job_class c, uint32_t gpus, uint32_t per = 1, uint32_t min = 1) {
  return {std::move(id), c, gpus, per, min};
}

std::vector<command> holds_in(const std::vector<command>& cs, const std::string& job) {
  std::vector<command> out;
  for (const auto& c : cs)
    if (c.kind == command_kind::hold && c.job == job) out.push_back(c);
  return out;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("the critical reserve holding a shrunk regular job back is said once, with the free GPUs") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.finished("crit", 10);  // its 8 GPUs stay in the reserve for 6 h
  REQUIRE(s.critical_reserve_gpus() == 8);
  const uint64_t decisions = s.decisions_total();
  const auto cs = s.submit(req("reg", job_class::regular, 16, 4), 20);
  REQUIRE(s.find("reg")->replicas == 2);  // beside the reserve: 8 of 16 GPUs
  const auto reg = holds_in(cs, "reg");
  REQUIRE(reg.size() == 1);
  CHECK(starts_with(reg[0].reason, "critical_reserve: 8 free GPUs are kept in the critical reserve (8 GPUs"));
  const auto cluster = holds_in(cs, "");
  REQUIRE(cluster.size() == 1);
  CHECK(starts_with(cluster[0].reason, "8 GPUs free, reg does not grow: critical_reserve: "));
  CHECK(s.decisions_total() == decisions + 1);  // the start; holds are not decisions
  CHECK(s.holds_total() == 2);
  std::string job;
  CHECK(s.held(&job).reason == hold_reason::critical_reserve);
  CHECK(job == "reg");
  CHECK(s.hold_of(*s.find("reg")).reason == hold_reason::critical_reserve);
  // Later passes with the same reason log nothing more.
  for (double t : {30.0, 40.0, 50.0}) CHECK(s.schedule_now(t).empty());
  CHECK(s.holds_total() == 2);
  CHECK(s.hold_of(*s.find("reg")).reason == hold_reason::critical_reserve);
  // Once the reserve has aged out it grows, and nothing is held any more.
  const auto grown = s.schedule_now(21700);
  CHECK(s.find("reg")->replicas == 4);
  CHECK(holds_in(grown, "").empty());
  CHECK(s.held().reason == hold_reason::none);
  CHECK(s.hold_of(*s.find("reg")).reason == hold_reason::none);
}

TEST_CASE("a regular job whose minimum needs GPUs the reserve keeps waits, and says so") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(req("be", job_class::best_effort, 4), 1);
  s.finished("crit", 10);  // 12 free, 8 of them in the reserve; be runs on 4
  const auto cs = s.submit(req("reg", job_class::regular, 16, 4, 4), 20);  // at least 16
  REQUIRE(s.find("reg")->phase == job_phase::pending);
  const auto h = holds_in(cs, "reg");
  REQUIRE(h.size() == 1);
  CHECK(starts_with(h[0].reason, "critical_reserve: 12 free GPUs are kept in the critical reserve"));
  CHECK(s.hold_of(*s.find("reg")).gpus_wanted == 16);
}

TEST_CASE("a critical job waiting on regular jobs inside their run window names the first of them") {
  auto s = make();
  s.submit(req("reg", job_class::regular, 16, 16), 0);  // one replica: it cannot shrink
  const auto cs = s.submit(req("crit", job_class::critical, 4), 100);
  const auto h = holds_in(cs, "crit");
  REQUIRE(h.size() == 1);
  CHECK(h[0].reason == "run_window: needs 4 GPUs, 0 free; the rest are held by regular jobs inside their run window (reg "
                       "first, its window ends in 7100 s)");
  CHECK(s.hold_of(*s.find("crit")).window_left_s == doctest::Approx(s.params().min_run_window_s - 100));
  CHECK(s.hold_of(*s.find("crit")).by == "reg");
  // Past the window reg gets a notice: crit now waits for its drain.
  const auto later = s.expire(100 + s.params().min_run_window_s);
  CHECK(s.find("reg")->phase == job_phase::draining);
  const auto d = holds_in(later, "crit");
  REQUIRE(d.size() == 1);
  CHECK(starts_with(d[0].reason, "draining: needs 4 GPUs, 0 free"));
}

TEST_CASE("jobs behind a waiting critical job say what they wait for, only the first few are logged") {
  auto s = make();
  s.submit(req("reg", job_class::regular, 14, 14), 0);
  s.submit(req("crit", job_class::critical, 4), 1);  // 2 free: it waits for reg's run window
  auto cs = s.submit(req("be", job_class::best_effort, 4, 4), 2);
  const auto h = holds_in(cs, "be");
  REQUIRE(h.size() == 1);
  CHECK(h[0].reason ==
        "critical_waits: the GPUs are owed to waiting critical job crit; 2 free are fewer than the 4 it needs to borrow "
        "them");
  // The queue's bound: a third pending job would be refused; the cluster line says so only when
  // no GPU is free, here the free ones explain more.
  CHECK(s.pending_count() == 2);
  std::string job;
  CHECK(s.held(&job).reason == hold_reason::run_window);
  CHECK(job == "crit");
}

TEST_CASE("exclusive and greedy explain the job at the head and those behind it") {
  auto ex = make(policy_kind::exclusive);
  ex.submit(req("a", job_class::regular, 12), 0);
  auto cs = ex.submit(req("b", job_class::regular, 8), 1);
  const auto hb = holds_in(cs, "b");
  REQUIRE(hb.size() == 1);
  CHECK(hb[0].reason == "cluster_full: needs 8 GPUs, 4 free and none it may take");
  ex.submit(req("c", job_class::best_effort, 8), 2);
  CHECK(ex.hold_of(*ex.find("c")).reason == hold_reason::queue_order);
  CHECK(ex.hold_of(*ex.find("c")).by == "b");
  auto gr = make(policy_kind::greedy);
  gr.submit(req("a", job_class::critical, 12), 0);
  gr.submit(req("b", job_class::critical, 8), 1);
  gr.submit(req("c", job_class::regular, 2), 2);  // nothing below a waiting critical job starts
  CHECK(gr.find("c")->phase == job_phase::pending);
  CHECK(gr.hold_of(*gr.find("c")).reason == hold_reason::queue_order);
  CHECK(gr.hold_of(*gr.find("c")).by == "b");
}

TEST_CASE("a critical host that lends nothing says why while preemptible jobs wait, once per change") {
  auto s = make();
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("reg", job_class::regular, 4), 1);
  auto cs = s.window(60);  // no forecast yet
  auto h = holds_in(cs, "crit");
  REQUIRE(h.size() == 1);
  CHECK(h[0].reason == "low_confidence: crit has no forecast: it has reported 0 steps (msomni job reports them only "
                       "with --run-dir); lending needs min_confidence 0.5: it lends nothing to guests");
  s.set_forecast("crit", {0.30, 0.25, 0.5, 1.0});  // sure, but 30% idle is under 35%
  h = holds_in(s.window(120), "crit");
  REQUIRE(h.size() == 1);
  CHECK(starts_with(h[0].reason, "below_threshold: "));
  CHECK(holds_in(s.window(180), "crit").empty());  // the same reason: not again
  CHECK(s.find("crit")->lending_hold == hold_reason::below_threshold);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  s.window(240);
  CHECK(s.find("reg")->phase == job_phase::guest);
  CHECK(s.find("crit")->lending_hold == hold_reason::none);
}

TEST_CASE("the queue at its bound is the cluster's hold when no GPU is free") {
  auto s = make();
  s.submit(req("big", job_class::regular, 16), 0);
  s.submit(req("a", job_class::regular, 16), 1);
  auto cs = s.submit(req("b", job_class::regular, 16), 2);
  CHECK(s.pending_count() == 2);
  std::string job;
  // No GPU is free: the jobs simply wait (cluster_full); the bound is what the cluster says.
  CHECK(s.held(&job).reason == hold_reason::queue_bound);
  CHECK(job.empty());
  const auto h = holds_in(cs, "");
  REQUIRE(h.size() == 1);
  CHECK(h[0].reason == "0 GPUs free: queue_bound: the queue holds 2 jobs, its queue_capacity 2: submissions are refused");
}
