// Scheduler policy core: placement, classes, preemption with drain, run window, elastic
// shrink/grow, co-location decisions, queue bounds, and a reason on every decision.
#include "scheduler_core.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

using namespace msomni::sched;

namespace {

// 2 switches x 2 nodes x 4 GPUs.
scheduler_core make(policy_kind p, size_t queue = 16, double critical_peak_memory_s = 21600,
                    double critical_reserve_factor = 1) {
  scheduler_params prm;
  prm.policy = p;
  prm.queue_capacity = queue;
  prm.critical_peak_memory_s = critical_peak_memory_s;
  prm.critical_reserve_factor = critical_reserve_factor;
  return scheduler_core(topology::uniform(16, 4, 2), prm);
}

job_request req(std::string id, job_class c, uint32_t gpus, uint32_t per = 1, uint32_t min = 1) {
  return {std::move(id), c, gpus, per, min};
}

// The core's counts by class and phase against a count over every job it lists.
void check_counts(const scheduler_core& s) {
  size_t total = 0;
  class_phase_counts recount{};
  for (const job_state* j : s.listing(~size_t{0}, total))
    ++recount[static_cast<size_t>(j->req.klass)][static_cast<size_t>(j->phase)];
  CHECK(recount == s.jobs_by_class_phase());
  uint64_t all = 0;
  for (const auto& by_phase : s.jobs_by_class_phase())
    for (uint64_t n : by_phase) all += n;
  CHECK(all == total);
}

// The commands that decide something (all but holds, which only explain).
std::vector<command> decisions_in(const std::vector<command>& cs) {
  std::vector<command> out;
  for (const auto& c : cs)
    if (c.kind != command_kind::hold) out.push_back(c);
  return out;
}

const command* find_cmd(const std::vector<command>& cs, command_kind k, const std::string& job) {
  for (const auto& c : cs)
    if (c.kind == k && c.job == job) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("placement keeps a group under one switch and refuses double allocation") {
  placement pl(topology::uniform(16, 4, 2));
  auto small = pl.choose(2);
  REQUIRE(small);
  CHECK(small->single_node);
  pl.take("a", small->gpus);
  auto big = pl.choose(8);
  REQUIRE(big);
  CHECK(big->single_switch);
  for (uint32_t g : big->gpus) CHECK(pl.switch_of(g) == 1);  // switch 0 is no longer whole
  CHECK_THROWS_AS(pl.take("b", small->gpus), std::logic_error);
  CHECK_THROWS_AS(pl.give_back("b", small->gpus), std::logic_error);
  pl.give_back("a", small->gpus);
  CHECK(pl.free_count() == 16);
}

TEST_CASE("a critical job shrinks young regular jobs and takes best-effort GPUs once it can start") {
  auto s = make(policy_kind::omni);
  s.submit(req("be", job_class::best_effort, 8), 0);
  s.submit(req("reg", job_class::regular, 8, 2, 2), 0);
  auto cs = s.submit(req("crit", job_class::critical, 12, 4), 10);
  const command* reg = find_cmd(cs, command_kind::preempt, "reg");
  REQUIRE(reg);
  CHECK(reg->keep_replicas == 2);  // inside its run window: shrunk, not stopped
  // 4 GPUs come back only after the drain: best-effort works on meanwhile.
  CHECK(!find_cmd(cs, command_kind::preempt, "be"));
  CHECK(!find_cmd(cs, command_kind::start, "crit"));
  CHECK_FALSE(s.critical_starved_by_lower(10));
  auto drained = s.released("reg", reg->epoch, 30);
  const command* be = find_cmd(drained, command_kind::preempt, "be");
  REQUIRE(be);  // 4 free + 8 best-effort = 12: now it can start, so best-effort goes at once
  CHECK(be->drain_s == 0);
  CHECK(!find_cmd(drained, command_kind::start, "crit"));
  CHECK_FALSE(s.critical_starved_by_lower(30));
  auto after = s.released("be", be->epoch, 30);
  CHECK(find_cmd(after, command_kind::start, "crit"));
  CHECK(s.find("reg")->phase == job_phase::running);
  CHECK(s.find("reg")->replicas == 2);
  CHECK(s.find("be")->phase == job_phase::pending);
  // A repeated or stale job_released changes nothing.
  CHECK(s.released("reg", reg->epoch, 31).empty());
  CHECK(s.released("be", be->epoch - 1, 31).empty());
}

TEST_CASE("preemptible work borrows free GPUs a waiting critical job cannot use yet and gives them back at once") {
  auto s = make(policy_kind::omni);
  s.submit(req("c1", job_class::critical, 12), 0);
  auto cs = s.submit(req("c2", job_class::critical, 8), 10);  // 4 free of the 8 it needs
  CHECK(!find_cmd(cs, command_kind::start, "c2"));
  cs = s.submit(req("be", job_class::best_effort, 3), 20);
  const command* st = find_cmd(cs, command_kind::start, "be");
  REQUIRE(st);
  CHECK(st->reason.find("borrows free GPUs a waiting critical job cannot use yet") != std::string::npos);
  // A regular job borrows on the same terms: its run window does not cover a borrowed run.
  cs = s.submit(req("reg", job_class::regular, 1), 30);
  st = find_cmd(cs, command_kind::start, "reg");
  REQUIRE(st);
  CHECK(st->reason.find("outside its run window") != std::string::npos);
  CHECK(s.find("reg")->borrowed);
  CHECK(s.find("be")->borrowed);
  CHECK_FALSE(s.critical_starved_by_lower(30));
  const queue_counts n = s.counts();  // c2 waits; c1 runs beside two borrowers
  CHECK(n.pending_by_class[0] == 1);
  CHECK(n.pending_by_class[1] + n.pending_by_class[2] == 0);
  CHECK(n.running == 3);
  CHECK(n.borrowed == 2);
  CHECK(n.draining == 0);
  // c1 ends: 12 free + 4 borrowed. c2 takes free GPUs at once; the borrowers keep theirs.
  cs = s.finished("c1", 40);
  CHECK(find_cmd(cs, command_kind::start, "c2"));
  CHECK(!find_cmd(cs, command_kind::preempt, "be"));
  CHECK(!find_cmd(cs, command_kind::preempt, "reg"));
  // greedy and exclusive keep every lower class out of the GPUs a critical job waits for.
  for (policy_kind p : {policy_kind::greedy, policy_kind::exclusive}) {
    auto g = make(p);
    g.submit(req("c1", job_class::critical, 12), 0);
    g.submit(req("c2", job_class::critical, 8), 10);
    CHECK(!find_cmd(g.submit(req("be", job_class::best_effort, 4), 20), command_kind::start, "be"));
  }
}

TEST_CASE("the first waiting critical job takes best-effort GPUs as soon as that lets it start") {
  auto s = make(policy_kind::omni);
  s.submit(req("c1", job_class::critical, 8), 0);
  s.submit(req("c2", job_class::critical, 12), 10);  // waits: 8 free
  auto cs = s.submit(req("be", job_class::best_effort, 8), 20);
  REQUIRE(find_cmd(cs, command_kind::start, "be"));  // borrows c2's 8 free GPUs
  cs = s.finished("c1", 30);  // 8 free + 8 best-effort >= 12
  const command* n = find_cmd(cs, command_kind::preempt, "be");
  REQUIRE(n);
  CHECK(n->drain_s == 0);
  CHECK(n->reason.find("c2") != std::string::npos);
  CHECK(!find_cmd(cs, command_kind::start, "be"));  // no refill of the GPUs c2 is owed
  CHECK_FALSE(s.critical_starved_by_lower(30));
  cs = s.released("be", n->epoch, 30);
  CHECK(find_cmd(cs, command_kind::start, "c2"));
}

TEST_CASE("a borrowed regular run gives its GPUs back at once inside its run window") {
  auto s = make(policy_kind::omni);
  s.submit(req("c1", job_class::critical, 8), 0);
  s.submit(req("c2", job_class::critical, 12), 10);  // waits: 8 free
  REQUIRE(find_cmd(s.submit(req("reg", job_class::regular, 8, 8), 20), command_kind::start, "reg"));
  REQUIRE(s.find("reg")->borrowed);
  auto cs = s.finished("c1", 30);  // 8 free + 8 borrowed >= 12, 10 s into reg's run
  const command* n = find_cmd(cs, command_kind::preempt, "reg");
  REQUIRE(n);
  CHECK(n->drain_s == 0);
  CHECK(n->reason.find("c2") != std::string::npos);
  CHECK_FALSE(s.critical_starved_by_lower(30));
  cs = s.released("reg", n->epoch, 30);
  CHECK(find_cmd(cs, command_kind::start, "c2"));
  CHECK_FALSE(s.find("reg")->borrowed);  // waiting again; its next start decides anew
}

TEST_CASE("a regular job is preempted only after its minimum run window") {
  auto s = make(policy_kind::omni);
  s.submit(req("reg", job_class::regular, 16, 16), 0);  // one replica: nothing to shrink
  auto early = s.submit(req("c1", job_class::critical, 4), 100);
  CHECK(!find_cmd(early, command_kind::preempt, "reg"));
  CHECK_FALSE(s.critical_starved_by_lower(100));  // protected by the window: not starving
  CHECK(s.critical_starved_by_lower(7300));       // ... until the window has passed
  auto later = s.expire(7300);
  const command* n = find_cmd(later, command_kind::preempt, "reg");
  REQUIRE(n);
  CHECK(n->drain_s == 600);
  CHECK(n->reason.find("c1") != std::string::npos);
}

TEST_CASE("a victim that never answers is released at the drain deadline and resumes later") {
  auto s = make(policy_kind::omni);
  s.submit(req("reg", job_class::regular, 16, 16), 0);
  auto cs = s.submit(req("c1", job_class::critical, 16), 8000);
  REQUIRE(find_cmd(cs, command_kind::preempt, "reg"));
  CHECK(s.next_deadline_s() == doctest::Approx(8600));
  CHECK(s.expire(8599).empty());
  auto forced = s.expire(8600);
  CHECK(find_cmd(forced, command_kind::force_release, "reg"));
  CHECK(find_cmd(forced, command_kind::start, "c1"));
  CHECK(s.find("reg")->preemptions == 1);
  // It resumes at once, but on borrowed terms while the 16-GPU critical peak (last seen at
  // 8600) is inside omni's 6 h reserve memory: it would give the GPUs back at once.
  const auto again_cmds = s.finished("c1", 9000);  // keep the commands alive
  const command* again = find_cmd(again_cmds, command_kind::start, "reg");
  REQUIRE(again);
  CHECK(again->reason.find("borrows the critical reserve") != std::string::npos);
}

TEST_CASE("exclusive never preempts and greedy ignores the run window") {
  auto ex = make(policy_kind::exclusive);
  ex.submit(req("reg", job_class::regular, 16), 0);
  CHECK(decisions_in(ex.submit(req("c1", job_class::critical, 4), 9000)).empty());
  auto gr = make(policy_kind::greedy);
  gr.submit(req("reg", job_class::regular, 16), 0);
  CHECK(find_cmd(gr.submit(req("c1", job_class::critical, 4), 1), command_kind::preempt, "reg"));
}

TEST_CASE("omni co-locates only above the idle threshold and with the safety margin") {
  auto s = make(policy_kind::omni);
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("reg", job_class::regular, 4), 1);
  s.set_forecast("crit", {0.30, 0.25, 0.5, 1.0});
  CHECK(decisions_in(s.window(60)).empty());
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  auto cs = s.window(120);
  const command* g = find_cmd(cs, command_kind::colocate, "reg");
  REQUIRE(g);
  CHECK(g->share == doctest::Approx(0.38));
  CHECK(g->host == "crit");
  CHECK(g->gpus.size() == 4);
  s.set_forecast("crit", {0.20, 0.1, 0.5, 1.0});
  CHECK(find_cmd(s.window(180), command_kind::evict_guest, "reg"));
  CHECK(s.find("reg")->phase == job_phase::pending);
}

TEST_CASE("a host past its slowdown budget lends nothing until its run has grown back under it") {
  auto s = make(policy_kind::omni);  // default budget: 1% of the host's run
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("reg", job_class::regular, 4), 1);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  s.report_guest_delay("crit", 0, 1800);
  REQUIRE(find_cmd(s.window(1800), command_kind::colocate, "reg"));
  // Its guest cost it 40 s in the first hour: past 1% of 3600 s.
  s.report_guest_delay("crit", 40, 3600);
  CHECK(s.find("crit")->over_budget);
  CHECK(s.guest_share("crit") == 0);
  const auto evicted = s.window(3600);
  const command* e = find_cmd(evicted, command_kind::evict_guest, "reg");
  REQUIRE(e);
  CHECK(e->reason == "crit lost 40 s of its run to guests, past its 1% slowdown budget (a budget of 36 s of its 3600 s run)");
  CHECK(s.budget_holds() == 1);
  CHECK(s.budget_hold_windows() == 1);  // this window: it lent nothing for its budget
  s.report_guest_delay("crit", 40, 3900);  // still past 1% of 3900 s: held
  CHECK(decisions_in(s.window(3900)).empty());
  CHECK(s.budget_holds() == 1);         // still the one time it went past
  CHECK(s.budget_hold_windows() == 2);  // a second window held
  // 40 s of 4000 s is back under 1%: it lends again, and a report for a guest, a pending
  // or an unknown job changes nothing.
  s.report_guest_delay("crit", 40, 4000);
  CHECK_FALSE(s.find("crit")->over_budget);
  s.report_guest_delay("nobody", 1e9, 4000);
  const auto again = s.window(7200);
  REQUIRE(find_cmd(again, command_kind::colocate, "reg"));
  s.report_guest_delay("reg", 1e9, 7200);
  CHECK_FALSE(s.find("reg")->over_budget);
  CHECK(s.budget_holds() == 1);
  CHECK(s.budget_hold_windows() == 2);
}

TEST_CASE("greedy has no slowdown budget") {
  auto s = make(policy_kind::greedy);
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("be", job_class::best_effort, 2), 1);
  s.set_forecast("crit", {0.10, 0.0, 0.2, 0.1});
  s.report_guest_delay("crit", 1000, 1800);
  CHECK(s.guest_share("crit") == doctest::Approx(0.2));
  CHECK_FALSE(s.find("crit")->over_budget);
  CHECK(s.budget_holds() == 0);
}

TEST_CASE("a predicted phase counts toward the window's idle share and is lent whole") {
  auto s = make(policy_kind::omni);
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("reg", job_class::regular, 4), 1);
  // Ordinary steps 25% idle; a 5% phase leaves the window at 28.75%: below 35%.
  s.set_forecast("crit", {0.25, 0.20, 0.3, 1.0, 0.05});
  CHECK(decisions_in(s.window(60)).empty());
  // A 20% phase takes the window to 40%: the phase is lent whole, the rest with its margin.
  s.set_forecast("crit", {0.25, 0.20, 0.3, 1.0, 0.20});
  const auto cs = s.window(120);
  const command* g = find_cmd(cs, command_kind::colocate, "reg");
  REQUIRE(g);
  CHECK(g->share == doctest::Approx(0.20 + 0.80 * 0.20));
}

TEST_CASE("a host whose idle share over its rhythm passes the threshold lends in every window") {
  auto s = make(policy_kind::omni);
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("reg", job_class::regular, 4), 1);
  // Ordinary steps 30% idle, no phase in this window; over its rhythm (phases included) 38%.
  s.set_forecast("crit", {0.30, 0.25, 0.3, 1.0, 0.0, 0.38});
  const auto cs = s.window(60);
  const command* g = find_cmd(cs, command_kind::colocate, "reg");
  REQUIRE(g);
  CHECK(g->share == doctest::Approx(0.25));  // the ordinary share, margin cut
  // Below the threshold over the rhythm and in the window: the guest leaves.
  s.set_forecast("crit", {0.30, 0.25, 0.3, 1.0, 0.0, 0.33});
  CHECK(find_cmd(s.window(120), command_kind::evict_guest, "reg"));
}

TEST_CASE("guests are packed into a host's GPUs on disjoint slices and all leave when it ends") {
  auto s = make(policy_kind::omni);
  s.submit(req("crit", job_class::critical, 8), 0);
  s.submit(req("fill", job_class::best_effort, 8), 1);  // takes the other 8 GPUs
  s.submit(req("r4", job_class::regular, 4), 2);
  s.submit(req("b6", job_class::best_effort, 6), 3);  // too big once r4 is placed: skipped
  s.submit(req("b2", job_class::best_effort, 2), 4);
  s.submit(req("b1", job_class::best_effort, 1), 5);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  auto cs = s.window(60);
  const command* r4 = find_cmd(cs, command_kind::colocate, "r4");
  const command* b2 = find_cmd(cs, command_kind::colocate, "b2");
  const command* b1 = find_cmd(cs, command_kind::colocate, "b1");
  REQUIRE(r4);
  REQUIRE(b2);
  REQUIRE(b1);  // behind the skipped b6, in the 2 GPUs still unused
  CHECK_FALSE(find_cmd(cs, command_kind::colocate, "b6"));
  const auto& host = s.find("crit")->gpus;
  std::vector<uint32_t> lent = r4->gpus;
  lent.insert(lent.end(), b2->gpus.begin(), b2->gpus.end());
  lent.insert(lent.end(), b1->gpus.begin(), b1->gpus.end());
  std::sort(lent.begin(), lent.end());
  CHECK(lent.size() == 7);
  CHECK(std::adjacent_find(lent.begin(), lent.end()) == lent.end());  // no GPU lent twice
  for (uint32_t g : lent) CHECK(std::find(host.begin(), host.end(), g) != host.end());
  s.submit(req("b1b", job_class::best_effort, 1), 70);
  CHECK(find_cmd(s.window(120), command_kind::colocate, "b1b"));  // the last unused GPU
  auto done = s.finished("crit", 200);
  CHECK(find_cmd(done, command_kind::evict_guest, "r4"));
  CHECK(find_cmd(done, command_kind::evict_guest, "b2"));
  CHECK(find_cmd(done, command_kind::evict_guest, "b1"));
  CHECK(find_cmd(done, command_kind::evict_guest, "b1b"));
  CHECK(s.find("r4")->phase != job_phase::guest);
}

TEST_CASE("greedy lends the last observed idle share without a threshold") {
  auto s = make(policy_kind::greedy);
  s.submit(req("crit", job_class::critical, 16), 0);
  s.submit(req("be", job_class::best_effort, 2), 1);
  s.set_forecast("crit", {0.10, 0.0, 0.2, 0.1});
  const auto g_cmds = s.window(60);  // keep the commands alive
  const command* g = find_cmd(g_cmds, command_kind::colocate, "be");
  REQUIRE(g);
  CHECK(g->share == doctest::Approx(0.2));
}

TEST_CASE("elastic start when full and grow back when room frees up") {
  auto s = make(policy_kind::omni, 16, 0);  // no critical reserve: it would hold the growth back
  s.submit(req("a", job_class::critical, 12, 4), 0);
  auto cs = s.submit(req("b", job_class::regular, 8, 2, 1), 1);
  const command* st = find_cmd(cs, command_kind::start, "b");
  REQUIRE(st);
  CHECK(st->replicas == 2);
  auto grown = s.finished("a", 50);
  const command* rs = find_cmd(grown, command_kind::resize, "b");
  REQUIRE(rs);
  CHECK(rs->replicas == 4);
  CHECK(rs->gpus.size() == 8);
}

TEST_CASE("rejections are counted") {
  auto s = make(policy_kind::omni, 1);
  s.submit(req("big", job_class::critical, 16), 0);
  s.submit(req("wait", job_class::critical, 16), 1);  // the one queue slot
  CHECK(find_cmd(s.submit(req("over", job_class::regular, 1), 2), command_kind::reject, "over"));
  CHECK(find_cmd(s.submit(req("huge", job_class::regular, 64), 3), command_kind::reject, "huge"));
  CHECK(s.counts().rejected == 2);
}

TEST_CASE("queue is bounded and every decision carries a reason") {
  auto s = make(policy_kind::omni, 2);
  s.submit(req("x", job_class::critical, 16), 0);
  s.submit(req("p1", job_class::regular, 1), 0);
  s.submit(req("p2", job_class::regular, 1), 0);
  auto cs = s.submit(req("p3", job_class::regular, 1), 0);
  REQUIRE(find_cmd(cs, command_kind::reject, "p3"));
  CHECK(find_cmd(s.submit(req("huge", job_class::regular, 17), 0), command_kind::reject, "huge"));
  CHECK(s.pending_count() == 2);
  CHECK(!s.log().empty());
  for (const auto& d : s.log()) CHECK_FALSE(d.cmd.reason.empty());
}

TEST_CASE("a second critical job behind a blocked critical job still reclaims from lower classes") {
  auto s = make(policy_kind::omni);
  for (int i = 0; i < 16; ++i) s.submit(req("reg" + std::to_string(i), job_class::regular, 1), 0);
  double t = 8000;  // every regular job is past its 2 h run window
  auto a = s.submit(req("critA", job_class::critical, 1), t);
  REQUIRE(std::count_if(a.begin(), a.end(), [](const command& c) { return c.kind == command_kind::preempt; }) == 1);
  auto b = s.submit(req("critB", job_class::critical, 1), t);  // A still waits for its drain
  CHECK(std::count_if(b.begin(), b.end(), [](const command& c) { return c.kind == command_kind::preempt; }) == 1);
  CHECK_FALSE(s.critical_starved_by_lower(t));
}

TEST_CASE("omni keeps regular jobs out of the reserve for critical demand until its peak ages out") {
  auto s = make(policy_kind::omni);  // 16 GPUs, critical_peak_memory_s = 6 h here
  REQUIRE(find_cmd(s.submit(req("crit", job_class::critical, 12), 0), command_kind::start, "crit"));
  s.finished("crit", 100);
  // Beside the 12 critical GPUs seen 100 s ago only 4 are free of the reserve: the regular
  // job starts at 2 of its 4 replicas, and a second one waits without blocking the
  // best-effort job behind it, which gives way at once.
  const auto st_cmds = s.submit(req("reg", job_class::regular, 8, 2, 1), 200);  // keep the commands alive
  const command* st = find_cmd(st_cmds, command_kind::start, "reg");
  REQUIRE(st);
  CHECK(st->replicas == 2);
  CHECK(st->reason.find("critical reserve") != std::string::npos);
  // A second one borrows the reserve on best-effort terms, outside its run window.
  const auto reg2_cmds = s.submit(req("reg2", job_class::regular, 4, 4), 201);
  st = find_cmd(reg2_cmds, command_kind::start, "reg2");
  REQUIRE(st);
  CHECK(st->reason.find("borrows the critical reserve") != std::string::npos);
  CHECK(s.find("reg2")->borrowed);
  CHECK(find_cmd(s.submit(req("be", job_class::best_effort, 8), 202), command_kind::start, "be"));
  CHECK_FALSE(find_cmd(s.submit(req("reg3", job_class::regular, 4, 4), 203), command_kind::start, "reg3"));
  CHECK(s.reserve_deferrals() > 0);  // no room at all: it waits
  CHECK(decisions_in(s.window(21000)).empty());  // the peak is still inside the memory: no start, no growth
  // Aged out: the next regular start is a locked run again.
  const auto reg3_cmds = s.finished("be", 21800);
  st = find_cmd(reg3_cmds, command_kind::start, "reg3");
  REQUIRE(st);
  CHECK(st->reason.find("borrows") == std::string::npos);
  CHECK_FALSE(s.find("reg3")->borrowed);
  // A critical job takes the borrowed run back at once; the locked runs keep their windows.
  // reg grew into the rest when be ended: nothing is free, reg2's 4 GPUs cover crit2.
  auto cs = s.submit(req("crit2", job_class::critical, 4), 21900);
  const command* n = find_cmd(cs, command_kind::preempt, "reg2");
  REQUIRE(n);
  CHECK(n->drain_s == 0);
  CHECK(!find_cmd(cs, command_kind::preempt, "reg"));
  CHECK(!find_cmd(cs, command_kind::preempt, "reg3"));
  // greedy keeps no reserve
  auto g = make(policy_kind::greedy);
  g.submit(req("crit", job_class::critical, 12), 0);
  g.finished("crit", 100);
  const auto gs_cmds = g.submit(req("reg", job_class::regular, 8, 2, 1), 200);  // keep the commands alive
  const command* gs = find_cmd(gs_cmds, command_kind::start, "reg");
  REQUIRE(gs);
  CHECK(gs->replicas == 4);
}

TEST_CASE("the critical reserve is a multiple of the remembered peak") {
  // After a 6-GPU critical peak on 16 GPUs, regular jobs may lock 16 - factor x 6 GPUs:
  // 4 at 2x (2 of the 4 replicas of 2 GPUs each), 10 at 1x (the job starts whole).
  struct { double factor; uint32_t replicas; } cases[] = {{2.0, 2}, {1.0, 4}};
  for (const auto& c : cases) {
    CAPTURE(c.factor);
    auto s = make(policy_kind::omni, 16, 21600, c.factor);
    s.submit(req("crit", job_class::critical, 6), 0);
    s.finished("crit", 100);
    const auto cmds = s.submit(req("reg", job_class::regular, 8, 2, 1), 200);
    const command* st = find_cmd(cmds, command_kind::start, "reg");
    REQUIRE(st);
    CHECK(st->replicas == c.replicas);
    CHECK_FALSE(s.find("reg")->borrowed);
  }
}

TEST_CASE("a regular job's run window ending while a critical job waits is a wake-up for the core") {
  auto s = make(policy_kind::omni, 16, 0);
  s.submit(req("reg", job_class::regular, 16, 16), 0);
  CHECK(s.next_window_end_s() < 0);  // nobody waits
  CHECK_FALSE(find_cmd(s.submit(req("c1", job_class::critical, 8), 100), command_kind::preempt, "reg"));
  CHECK(s.next_window_end_s() == doctest::Approx(7200));
  CHECK(find_cmd(s.expire(7200), command_kind::preempt, "reg"));
  CHECK(s.next_window_end_s() < 0);  // seen by that pass
}

TEST_CASE("after a restart a rejoining job keeps free GPUs it reports and a conflicting one is requeued") {
  auto s = make(policy_kind::omni);
  // A regular job that ran under the previous instance on GPUs 4..7 at its epoch 3.
  auto cs = s.adopt(req("reg", job_class::regular, 4), {4, 5, 6, 7}, 4, 3, 100);
  const command* kept = find_cmd(cs, command_kind::adopted, "reg");
  REQUIRE(kept);
  CHECK(kept->epoch == 3);  // the job's own count goes on
  CHECK(kept->gpus == std::vector<uint32_t>{4, 5, 6, 7});
  CHECK(kept->reason.find("restart") != std::string::npos);
  CHECK(s.find("reg")->phase == job_phase::running);
  CHECK(s.gpus().owner(5) == "reg");
  CHECK(s.gpus().free_count() == 12);
  // Its run window starts again at the adoption: not preemptible before 100 + 7200.
  CHECK(s.find("reg")->run_since_s == 100);
  // A second job reporting one of those GPUs is not given it twice: it is queued and told to
  // stop its run. adopt places nothing; the next pass starts it elsewhere (a higher epoch
  // than the one it reported).
  cs = s.adopt(req("be", job_class::best_effort, 2), {7, 8}, 2, 5, 101);
  const command* again = find_cmd(cs, command_kind::requeue, "be");
  REQUIRE(again);
  CHECK(again->epoch == 5);
  CHECK(again->reason.find("GPU 7 is reg's here") != std::string::npos);
  CHECK(cs.size() == 1);
  CHECK(s.find("be")->phase == job_phase::pending);
  cs = s.schedule_now(102);
  const command* start = find_cmd(cs, command_kind::start, "be");
  REQUIRE(start);
  CHECK(start->epoch == 6);
  for (uint32_t g : start->gpus) CHECK(g != 7);
  CHECK(s.gpus().free_count() == 10);
}

TEST_CASE("a rejoin that reports a size the job cannot have or GPUs outside the cluster is requeued") {
  auto s = make(policy_kind::omni);
  auto cs = s.adopt(req("a", job_class::regular, 8, 4, 1), {0, 1, 2}, 1, 1, 0);
  REQUIRE(find_cmd(cs, command_kind::requeue, "a"));
  CHECK(find_cmd(cs, command_kind::requeue, "a")->reason.find("3 GPUs for 1 replicas") != std::string::npos);
  cs = s.adopt(req("b", job_class::critical, 2), {15, 16}, 2, 1, 0);
  REQUIRE(find_cmd(cs, command_kind::requeue, "b"));
  CHECK(find_cmd(cs, command_kind::requeue, "b")->reason.find("GPU 16 is not in this cluster") != std::string::npos);
  cs = s.adopt(req("c", job_class::regular, 2), {3, 3}, 2, 1, 0);
  REQUIRE(find_cmd(cs, command_kind::requeue, "c"));
  CHECK(find_cmd(cs, command_kind::requeue, "c")->reason.find("a GPU twice") != std::string::npos);
  // A known id is rejected, as submit rejects it.
  cs = s.adopt(req("a", job_class::regular, 2), {10, 11}, 2, 1, 0);
  REQUIRE(find_cmd(cs, command_kind::reject, "a"));
  CHECK(find_cmd(cs, command_kind::reject, "a")->reason == "duplicate job id");
}

TEST_CASE("a job submitted again to a restarted scheduler keeps its place in line") {
  auto s = make(policy_kind::omni);
  s.submit(req("big", job_class::regular, 16), 0);
  // Submitted again after a restart, in reconnect order: b (in line 10 s), a (in line 20 s),
  // c (new), d (claims years: counts as 30 days), e (NaN: counts as now).
  auto again = [&](std::string id, double ago) {
    job_request r = req(std::move(id), job_class::regular, 16);
    r.submitted_ago_s = ago;
    s.submit(r, 100);
  };
  again("b", 10);
  again("a", 20);
  again("c", 0);
  again("d", 1e12);
  again("e", std::nan(""));
  CHECK(s.find("a")->submit_s == doctest::Approx(80));
  CHECK(s.find("d")->submit_s == doctest::Approx(100 - job_request::max_submitted_ago_s));
  CHECK(s.find("e")->submit_s == doctest::Approx(100));
  // Each finished job hands the whole cluster to the next in line.
  std::vector<std::string> order;
  std::string running = "big";
  for (int i = 0; i < 5; ++i) {
    const auto cs = s.finished(running, 200 + i);
    const command* st = nullptr;
    for (const auto& c : cs)
      if (c.kind == command_kind::start) st = &c;
    REQUIRE(st);
    running = st->job;
    order.push_back(running);
  }
  CHECK(order == std::vector<std::string>{"d", "a", "b", "c", "e"});
}

TEST_CASE("a rejoin on free GPUs is adopted even with a full queue and rejected when it would have to wait") {
  auto s = make(policy_kind::omni, 1);
  s.submit(req("big", job_class::critical, 16), 0);  // holds everything
  s.submit(req("waiting", job_class::regular, 1), 0);  // fills the one-place queue
  auto cs = s.adopt(req("late", job_class::regular, 1), {0}, 1, 2, 1);
  REQUIRE(find_cmd(cs, command_kind::reject, "late"));
  CHECK(find_cmd(cs, command_kind::reject, "late")->reason.find("queue is full") != std::string::npos);
  CHECK(s.find("late") == nullptr);
  s.finished("big", 2);  // "waiting" starts on one GPU; 15 are free
  REQUIRE(s.find("waiting")->phase == job_phase::running);
  REQUIRE(s.gpus().owner(15).empty());
  cs = s.adopt(req("late", job_class::regular, 1), {15}, 1, 2, 3);
  CHECK(find_cmd(cs, command_kind::adopted, "late"));
}

TEST_CASE("the job listing puts jobs holding GPUs before the queue in its order and is bounded") {
  auto s = make(policy_kind::omni);
  s.submit(req("run", job_class::regular, 16), 0);  // holds everything
  s.submit(req("be", job_class::best_effort, 2), 1);
  s.submit(req("crit", job_class::critical, 16), 2);  // waits for run's drain, ahead of be in the queue
  size_t total = 0;
  auto all = s.listing(10, total);
  CHECK(total == 3);
  REQUIRE(all.size() == 3);
  CHECK(all[0]->req.id == "run");  // it holds GPUs (inside its run window crit waits for it)
  CHECK(all[1]->req.id == "crit");
  CHECK(all[2]->req.id == "be");
  auto first = s.listing(1, total);
  CHECK(first.size() == 1);
  CHECK(total == 3);
}

TEST_CASE("the counts by class and phase follow every start, notice, drain, guest, finish, reject and rejoin") {
  using p = job_phase;
  const auto at = [](const scheduler_core& s, job_class c, job_phase ph) {
    return s.jobs_by_class_phase()[static_cast<size_t>(c)][static_cast<size_t>(ph)];
  };
  auto s = make(policy_kind::omni, 2);
  check_counts(s);
  s.submit(req("be", job_class::best_effort, 8), 0);
  s.submit(req("reg", job_class::regular, 8, 2, 2), 0);
  CHECK(at(s, job_class::best_effort, p::running) == 1);
  CHECK(at(s, job_class::regular, p::running) == 1);
  check_counts(s);
  auto cs = s.submit(req("crit", job_class::critical, 12, 4), 10);
  const command* reg = find_cmd(cs, command_kind::preempt, "reg");
  REQUIRE(reg);
  CHECK(at(s, job_class::regular, p::draining) == 1);
  CHECK(at(s, job_class::critical, p::pending) == 1);
  check_counts(s);
  const auto drained = s.released("reg", reg->epoch, 30);
  const command* be = find_cmd(drained, command_kind::preempt, "be");
  REQUIRE(be);
  check_counts(s);
  s.released("be", be->epoch, 30);
  CHECK(at(s, job_class::critical, p::running) == 1);
  CHECK(at(s, job_class::best_effort, p::pending) == 1);
  check_counts(s);
  // Refused: larger than the cluster, then a full queue (capacity 2).
  s.submit(req("huge", job_class::regular, 64), 40);
  s.submit(req("q1", job_class::regular, 16), 40);
  s.submit(req("q2", job_class::regular, 16), 40);
  CHECK(s.counts().rejected == 2);
  check_counts(s);
  // The best-effort job becomes the critical job's guest, then everything ends.
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  s.finished("q1", 50);  // pending: it leaves the queue
  check_counts(s);
  s.window(60);
  check_counts(s);
  for (const char* id : {"crit", "reg", "be"}) {
    s.finished(id, 100);
    check_counts(s);
  }
  // A rejoin that keeps its GPUs, one that waits again, one that is refused (queue full).
  auto r = make(policy_kind::omni, 1);
  r.adopt(req("kept", job_class::regular, 4), {0, 1, 2, 3}, 4, 3, 0);
  r.adopt(req("moved", job_class::regular, 4), {0, 1, 2, 3}, 4, 3, 0);
  r.adopt(req("late", job_class::regular, 4), {0, 1, 2, 3}, 4, 3, 0);
  CHECK(at(r, job_class::regular, p::running) == 1);
  CHECK(at(r, job_class::regular, p::pending) == 1);
  check_counts(r);
}
