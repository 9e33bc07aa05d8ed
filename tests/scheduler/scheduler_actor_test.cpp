// The scheduler's actor shell on CAF's test coordinator (manual time): the graceful
// preemption flow (notice -> drain checkpoint -> release -> the critical job starts -> the
// victim resumes from its checkpoint), a victim that never answers (released at the drain
// deadline, recorded with its reason; its late answer ignored), the run window, and
// co-location fed by step reports through the predictor, and the shell's metric series.
#include "scheduler_actor.hpp"
#include "scheduler_metrics.hpp"

#include "support/caf_test_fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace msomni;
using namespace msomni::sched;

namespace {

using finish_atom = caf::atom_constant<caf::atom("jfinish")>;
using ckpt_atom = caf::atom_constant<caf::atom("jckpt")>;
using stop_atom = caf::atom_constant<caf::atom("jstop")>;

// The core's clock is the coordinator's manual clock, so advance() moves both.
class coordinator_clock final : public msomni::clock {
 public:
  explicit coordinator_clock(caf::actor_system& sys) : sys_(sys), start_(sys.clock().now()) {}
  time_point now() const override {
    return time_point{std::chrono::duration_cast<nanos>(sys_.clock().now() - start_)};
  }

 private:
  caf::actor_system& sys_;
  caf::actor_clock::time_point start_;
};

// The number named `name` among a decision's figures; NaN when it has none (so that any
// comparison with it fails).
double figure_of(const msg::reason_figures& figures, const std::string& name) {
  for (const auto& [n, v] : figures)
    if (n == name) return v;
  return std::nan("");
}

struct job_log {
  std::vector<msg::job_command> commands;  // every command but holds
  std::vector<msg::job_command> holds;     // why it waits, as the scheduler said it
  std::vector<msg::preempt_notice> notices;
  const msg::job_command* last(command_kind k) const {
    for (auto it = commands.rbegin(); it != commands.rend(); ++it)
      if (it->kind == k) return &*it;
    return nullptr;
  }
  size_t count(command_kind k) const {
    size_t n = 0;
    for (const auto& c : commands) n += c.kind == k;
    return n;
  }
};

struct job_script {
  msg::job_submit submit;
  bool answers_notices = true;      // false: never sends job_released
  caf::timespan checkpoint_time = 2min;
  uint64_t checkpoint_step = 4400;
  // Set: the job ran under a previous scheduler instance and rejoins instead of submitting.
  std::optional<msg::job_rejoin> rejoin = std::nullopt;
};

// A job: submits itself, records what it is told, checkpoints on a notice (taking
// checkpoint_time) and answers with job_released, finishes when told to.
caf::behavior scripted_job(caf::event_based_actor* self, msg::scheduler_actor sched, job_script js,
                           std::shared_ptr<job_log> log) {
  if (js.rejoin) self->send(sched, *js.rejoin);
  else self->send(sched, js.submit);
  return {
      [self, js, log](const msg::job_command& c) {
        if (c.kind == command_kind::hold) return log->holds.push_back(c);
        log->commands.push_back(c);
        // A shrink notice: the leaving replicas checkpoint, then the job answers the same way.
        if (c.kind == command_kind::preempt && js.answers_notices)
          self->delayed_send(self, js.checkpoint_time, ckpt_atom::value, c.epoch);
      },
      [self, js, log](const msg::preempt_notice& n) {
        log->notices.push_back(n);
        if (js.answers_notices) self->delayed_send(self, js.checkpoint_time, ckpt_atom::value, n.epoch);
      },
      [self, sched, js](ckpt_atom, uint64_t epoch) {
        self->send(sched, msg::job_released{js.submit.job, epoch, js.checkpoint_step});
      },
      [self, sched, js](finish_atom) { self->send(sched, msg::job_finished{js.submit.job}); },
      // Its command stopped with a final checkpoint (msomni-run's exit 5).
      [self, sched, js](stop_atom) {
        self->send(sched, msg::job_finished{js.submit.job, 5, true, js.checkpoint_step});
      },
  };
}

decision_observer::behavior_type observer(decision_observer::pointer, std::shared_ptr<job_log> log) {
  return {[log](const msg::job_command& c) {
    (c.kind == command_kind::hold ? log->holds : log->commands).push_back(c);
  }};
}

struct scheduler_fixture : msomni::testing::caf_test_fixture {
  coordinator_clock clk{sys};
  std::shared_ptr<job_log> decisions = std::make_shared<job_log>();
  decision_observer obs = sys.spawn(observer, decisions);
  msg::scheduler_actor sched_actor;
  std::vector<caf::actor> spawned;
  std::shared_ptr<scheduler_metrics> metrics;

  // One node of 8 GPUs; the defaults (drain 10 min, run window 2 h, windows 30 min).
  // Without omni's critical reserve (tested in scheduler_core_test.cpp), which would hold a
  // preempted regular job back until the critical peak ages out: these tests follow the flow.
  static scheduler_params no_reserve() {
    scheduler_params p;
    p.critical_peak_memory_s = 0;
    return p;
  }
  explicit scheduler_fixture(scheduler_params p = no_reserve(), double recover_s = 0,
                             std::shared_ptr<scheduler_metrics> m = nullptr)
      : metrics(std::move(m)) {
    scheduler_settings s{topology::uniform(8, 8, 4), p, {}, recover_s};
    sched_actor = spawn_scheduler(sys, s, {&clk, obs, metrics, metrics ? "127.0.0.1:9464" : ""});
  }
  ~scheduler_fixture() {
    for (auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(sched_actor, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(obs, caf::exit_reason::user_shutdown);
    run();
  }
  std::shared_ptr<job_log> job(job_script js) {
    auto log = std::make_shared<job_log>();
    spawned.push_back(sys.spawn(scripted_job, sched_actor, js, log));
    run();
    return log;
  }
  void finish(size_t i) {
    caf::anon_send(spawned.at(i), finish_atom::value);
    run();
  }
  void stop(size_t i) {
    caf::anon_send(spawned.at(i), stop_atom::value);
    run();
  }
  double clock_s() const { return std::chrono::duration<double>(clk.now().time_since_epoch()).count(); }
  msg::scheduler_status status() {
    caf::scoped_actor self{sys};
    self->send(sched_actor, msg::scheduler_status_request{"test"});
    run();
    msg::scheduler_status out;
    self->receive([&](const msg::scheduler_status& s) { out = s; });
    return out;
  }
};

msg::job_submit submit(std::string id, job_class c, uint32_t gpus) {
  return {std::move(id), c, gpus, gpus, 1};
}

// A scheduler with metrics on.
struct metered_scheduler : scheduler_fixture {
  metered_scheduler()
      : scheduler_fixture(no_reserve(), 0,
                          std::make_shared<scheduler_metrics>(std::make_shared<metrics::metrics_registry>())) {}
  // The value of the series of `family` with exactly `labels` (a histogram's count), or
  // nullopt when there is none.
  std::optional<double> value(const std::string& family, std::vector<prometheus::ClientMetric::Label> labels = {}) {
    std::sort(labels.begin(), labels.end());
    for (const auto& f : metrics->collect()) {
      if (f.name != family) continue;
      for (auto m : f.metric) {
        std::sort(m.label.begin(), m.label.end());
        if (m.label != labels) continue;
        switch (f.type) {
          case prometheus::MetricType::Counter: return m.counter.value;
          case prometheus::MetricType::Histogram: return static_cast<double>(m.histogram.sample_count);
          default: return m.gauge.value;
        }
      }
    }
    return std::nullopt;
  }
  double sum_of(const std::string& family, const std::string& klass) {
    for (const auto& f : metrics->collect())
      if (f.name == family)
        for (const auto& m : f.metric)
          if (m.label == std::vector<prometheus::ClientMetric::Label>{{"class", klass}}) return m.histogram.sample_sum;
    return -1;
  }
  std::optional<double> jobs(const char* klass, const char* phase) {
    return value("msomni_sched_jobs", {{"class", klass}, {"phase", phase}});
  }
};

// A scheduler that restarted: it places nothing for its first 10 s.
struct restarted_scheduler : scheduler_fixture {
  restarted_scheduler() : scheduler_fixture(no_reserve(), 10) {}
};

}  // namespace

TEST_CASE_FIXTURE(scheduler_fixture, "graceful preemption: notice -> checkpoint in the drain period -> release -> resume") {
  auto reg = job({submit("reg", job_class::regular, 8)});
  REQUIRE(reg->last(command_kind::start));
  CHECK(reg->last(command_kind::start)->resume_step == 0);
  advance(2h);  // past the regular job's minimum run window

  auto crit = job({submit("crit", job_class::critical, 8)});
  REQUIRE(reg->notices.size() == 1);
  const auto notice = reg->notices.front();
  CHECK(notice.drain_s == doctest::Approx(600));
  CHECK(notice.reason == "make room for critical job crit (it lacks 8 GPUs; this gives 8, after 7200 s of its 7200 s run "
                        "window); drain 600 s");
  // The observer's copy of the notice has the same numbers by name.
  const auto* observed = decisions->last(command_kind::preempt);
  REQUIRE(observed);
  CHECK(figure_of(observed->figures, "gpus_short") == 8);
  CHECK(figure_of(observed->figures, "run_s") >= figure_of(observed->figures, "min_run_window_s"));
  CHECK(figure_of(observed->figures, "drain_s") == 600);
  CHECK(crit->commands.empty());  // its GPUs are still draining
  // ... and it is told so, once.
  REQUIRE(crit->holds.size() == 1);
  CHECK(crit->holds.front().reason.rfind("draining: ", 0) == 0);

  advance(1min);
  CHECK(crit->commands.empty());
  advance(1min);  // the victim's 2 min checkpoint completes: job_released
  REQUIRE(crit->last(command_kind::start));
  CHECK(crit->last(command_kind::start)->gpus.size() == 8);
  CHECK(decisions->count(command_kind::force_release) == 0);

  // The same release delivered twice changes nothing.
  caf::anon_send(sched_actor, msg::job_released{"reg", notice.epoch, 4400});
  run();
  CHECK(decisions->count(command_kind::start) == 2);

  advance(1h);
  finish(1);  // the critical job ends: the victim resumes from its checkpoint
  const auto* resumed = reg->last(command_kind::start);
  REQUIRE(resumed);
  CHECK(resumed->epoch > notice.epoch);
  CHECK(resumed->resume_step == 4400);
  CHECK(resumed->at_s == doctest::Approx(clock_s()));
  CHECK(reg->count(command_kind::start) == 2);
}

TEST_CASE_FIXTURE(scheduler_fixture, "a victim that does not answer is released at the drain deadline with the reason") {
  job_script silent{submit("reg", job_class::regular, 8)};
  silent.answers_notices = false;
  auto reg = job(silent);
  advance(2h);
  auto crit = job({submit("crit", job_class::critical, 8)});
  REQUIRE(reg->notices.size() == 1);
  const uint64_t epoch = reg->notices.front().epoch;

  advance(9min + 59s);
  CHECK(crit->commands.empty());
  CHECK(decisions->count(command_kind::force_release) == 0);
  advance(1s);  // the 10 min drain period is over
  const auto* forced = decisions->last(command_kind::force_release);
  REQUIRE(forced);
  CHECK(forced->job == "reg");
  CHECK(forced->reason == "no job_released within the drain period (600 s)");
  CHECK(figure_of(forced->figures, "drain_s") == 600);
  CHECK(forced->at_s == doctest::Approx(2 * 3600 + 600));
  REQUIRE(reg->last(command_kind::force_release));  // the victim is told too
  REQUIRE(crit->last(command_kind::start));

  // Its late answer is stale: nothing changes, the critical job keeps its GPUs.
  const size_t before = decisions->commands.size();
  caf::anon_send(sched_actor, msg::job_released{"reg", epoch, 4400});
  run();
  CHECK(decisions->commands.size() == before);

  finish(1);
  const auto* resumed = reg->last(command_kind::start);
  REQUIRE(resumed);
  CHECK(resumed->epoch > epoch);
  CHECK(resumed->resume_step == 0);  // it never reported a checkpoint: from scratch
}

TEST_CASE_FIXTURE(scheduler_fixture, "a regular job inside its run window is not preempted and best-effort goes at once when the critical job can start") {
  auto reg = job({submit("reg", job_class::regular, 4)});
  auto be = job({submit("be", job_class::best_effort, 4)});
  REQUIRE(reg->last(command_kind::start));
  REQUIRE(be->last(command_kind::start));
  advance(10min);
  auto crit = job({submit("crit", job_class::critical, 8)});
  // The critical job needs the regular job's GPUs too, which its run window protects:
  // evicting best-effort now would only leave 4 GPUs idle, so it keeps running.
  CHECK(reg->notices.empty());
  CHECK(be->notices.empty());
  CHECK(crit->commands.empty());
  advance(2h - 10min - 1min);
  CHECK(reg->notices.empty());
  advance(1min);  // the run window is over: the next reservation window reclaims it
  REQUIRE(reg->notices.size() == 1);
  CHECK(reg->notices.front().drain_s == 600);
  CHECK(be->notices.empty());  // the drain takes minutes; best-effort works on meanwhile
  advance(10min);              // the regular job never answered: forced at its deadline
  REQUIRE(be->notices.size() == 1);
  CHECK(be->notices.front().drain_s == 0);  // now the critical job can start: at once
  run();
  CHECK(decisions->count(command_kind::force_release) == 2);
  CHECK(crit->last(command_kind::start));
}

TEST_CASE_FIXTURE(scheduler_fixture, "step reports feed the predictor: a pending job is co-located in a critical job's idle share") {
  auto crit = job({submit("crit", job_class::critical, 8)});
  auto be = job({submit("be", job_class::best_effort, 2)});
  REQUIRE(crit->last(command_kind::start));
  CHECK(be->commands.empty());
  // 200 steps of 30 s, half of each waiting for data: idle share 0.5, very steady.
  for (int i = 0; i < 200; ++i)
    caf::anon_send(sched_actor, msg::job_step_report{"crit", 30, 15, 0, 0});
  run();
  advance(1800s);  // one reservation window
  const auto* guest = be->last(command_kind::colocate);
  REQUIRE(guest);
  CHECK(guest->host == "crit");
  CHECK(guest->share > 0.35);
  CHECK(guest->share <= 0.5);
  CHECK(guest->reason ==
        "host's predicted idle share passes the threshold: idle share 0.5 (next window 0.5, over its rhythm 0.5) passes "
        "idle_threshold 0.35; confidence 1 >= min_confidence 0.5 (step-time cv 0; 200 samples, 30 for full "
        "confidence); guests cost it 0 s of its 18 s slowdown budget (1% of its 1800 s run); lends 0.5");
  // The same numbers by name, as the predictor and the parameters gave them.
  CHECK(figure_of(guest->figures, "idle_share") == doctest::Approx(0.5));
  CHECK(figure_of(guest->figures, "idle_share") >= figure_of(guest->figures, "idle_threshold"));
  CHECK(figure_of(guest->figures, "confidence") >= figure_of(guest->figures, "min_confidence"));
  CHECK(figure_of(guest->figures, "samples") == 200);
  CHECK(figure_of(guest->figures, "warmup_samples") == 30);
  CHECK(figure_of(guest->figures, "guest_delay_s") <= figure_of(guest->figures, "slowdown_budget_s"));
  CHECK(figure_of(guest->figures, "lent_share") == doctest::Approx(guest->share));
}

TEST_CASE_FIXTURE(scheduler_fixture, "a critical job its guest slows past the slowdown budget stops lending at the next window") {
  auto crit = job({submit("crit", job_class::critical, 8)});
  auto be = job({submit("be", job_class::best_effort, 2)});
  // Alone: 30 s steps, 15 s of them waiting for data (15 s of compute).
  for (int i = 0; i < 200; ++i) caf::anon_send(sched_actor, msg::job_step_report{"crit", 30, 15, 0, 0});
  run();
  advance(1800s);
  REQUIRE(be->last(command_kind::colocate));
  // With the guest and no slower: the guest stays.
  for (int i = 0; i < 60; ++i) caf::anon_send(sched_actor, msg::job_step_report{"crit", 30, 15, 0, 0});
  run();
  advance(1800s);
  CHECK(be->count(command_kind::evict_guest) == 0);
  // Then 0.5 s more compute per step: 100 s lost by 5400 s, past 1% of the run.
  for (int i = 0; i < 200; ++i) caf::anon_send(sched_actor, msg::job_step_report{"crit", 30.5, 15, 0, 0});
  run();
  advance(1800s);
  const auto* evicted = be->last(command_kind::evict_guest);
  REQUIRE(evicted);
  CHECK(evicted->reason ==
        "crit lost 100 s of its run to guests, past its 1% slowdown budget (a budget of 54 s of its 5400 s run)");
  CHECK(figure_of(evicted->figures, "guest_delay_s") > figure_of(evicted->figures, "slowdown_budget_s"));
  CHECK(be->count(command_kind::colocate) == 1);  // not placed again in the same window
  CHECK(status().budget_holds == 1);
}

TEST_CASE_FIXTURE(scheduler_fixture, "a repeated submit is ignored and a job whose actor dies frees its GPUs") {
  auto a = job({submit("a", job_class::regular, 8)});
  caf::anon_send(sched_actor, submit("a", job_class::regular, 8));
  run();
  CHECK(decisions->count(command_kind::reject) == 0);
  auto b = job({submit("b", job_class::regular, 8)});
  CHECK(b->commands.empty());
  caf::anon_send_exit(spawned.at(0), caf::exit_reason::kill);
  run();
  REQUIRE(b->last(command_kind::start));
}

TEST_CASE_FIXTURE(scheduler_fixture, "a young elastic regular job is shrunk by a notice and keeps running on its other replica") {
  msg::job_submit elastic{"reg", job_class::regular, 8, 4, 1};  // 2 replicas of 4
  auto reg = job({elastic});
  REQUIRE(reg->last(command_kind::start));
  CHECK(reg->last(command_kind::start)->replicas == 2);
  advance(10min);  // inside its run window: it may be shrunk, not preempted
  auto crit = job({submit("crit", job_class::critical, 4)});
  CHECK(reg->notices.empty());  // no full preemption
  const auto* shrink = reg->last(command_kind::preempt);
  REQUIRE(shrink);
  CHECK(shrink->keep_replicas == 1);
  CHECK(shrink->drain_s == doctest::Approx(600));
  CHECK(shrink->reason == "shrink to 1 replicas for critical job crit (it lacks 4 GPUs; this gives 4); drain 600 s");
  CHECK(figure_of(shrink->figures, "keep_replicas") == 1);
  CHECK(crit->commands.empty());
  advance(2min);  // the leaving replica's checkpoint: job_released
  REQUIRE(crit->last(command_kind::start));
  CHECK(crit->last(command_kind::start)->gpus.size() == 4);
  CHECK(reg->count(command_kind::start) == 1);  // never stopped
  CHECK(decisions->count(command_kind::force_release) == 0);
  finish(1);  // the critical job ends: the regular job grows back to 2 replicas
  const auto* grown = reg->last(command_kind::resize);
  REQUIRE(grown);
  CHECK(grown->replicas == 2);
  CHECK(grown->gpus.size() == 8);
}

TEST_CASE_FIXTURE(restarted_scheduler, "after a restart rejoining jobs keep their GPUs and new submissions wait for the recovery period") {
  auto fresh = job({submit("fresh", job_class::regular, 4)});
  CHECK(fresh->commands.empty());  // held back: GPUs of jobs that have not rejoined yet look free
  CHECK(status().recovering);
  CHECK(status().held_back == 1);
  job_script old{submit("old", job_class::critical, 4)};
  old.rejoin = msg::job_rejoin{old.submit, {0, 1, 2, 3}, 1, 7};
  auto kept = job(old);
  const auto* adopted = kept->last(command_kind::adopted);
  REQUIRE(adopted);
  CHECK(adopted->epoch == 7);
  CHECK(adopted->gpus == std::vector<uint32_t>{0, 1, 2, 3});
  // Another job that claims one of those GPUs is not given it twice.
  job_script clash{submit("clash", job_class::best_effort, 2)};
  clash.rejoin = msg::job_rejoin{clash.submit, {3, 4}, 1, 2};
  auto requeued = job(clash);
  REQUIRE(requeued->last(command_kind::requeue));
  CHECK(requeued->last(command_kind::requeue)->reason.find("GPU 3 is old's here") != std::string::npos);
  CHECK_FALSE(requeued->last(command_kind::start));  // not placed while recovering either
  CHECK(fresh->commands.empty());
  advance(10s);  // the recovery period ends: the held-back submission is taken
  CHECK_FALSE(status().recovering);
  CHECK(status().held_back == 0);
  const auto* started = fresh->last(command_kind::start);
  REQUIRE(started);
  for (uint32_t g : started->gpus) CHECK(g >= 4);
  REQUIRE(requeued->last(command_kind::start));  // the requeued rejoin starts too, elsewhere
  for (uint32_t g : requeued->last(command_kind::start)->gpus) CHECK(g >= 4);
}

TEST_CASE_FIXTURE(metered_scheduler, "metrics: jobs by class and phase, GPUs, preemptions and first-start waits follow the core") {
  // Every class x phase series is there from the start, at 0; all GPUs free.
  for (const char* c : {"critical", "regular", "best_effort"})
    for (const char* p : {"pending", "running", "draining", "guest"}) CHECK(jobs(c, p) == 0.0);
  CHECK(value("msomni_sched_gpus", {{"state", "free"}}) == 8.0);
  CHECK(value("msomni_sched_gpus", {{"state", "used"}}) == 0.0);
  CHECK(status().metrics_address == "127.0.0.1:9464");

  auto reg = job({submit("reg", job_class::regular, 8)});
  CHECK(jobs("regular", "running") == 1.0);
  CHECK(value("msomni_sched_gpus", {{"state", "used"}}) == 8.0);
  CHECK(value("msomni_sched_queue_wait_seconds", {{"class", "regular"}}) == 1.0);
  CHECK(sum_of("msomni_sched_queue_wait_seconds", "regular") == doctest::Approx(0));
  advance(2h);
  auto crit = job({submit("crit", job_class::critical, 8)});
  CHECK(jobs("regular", "draining") == 1.0);
  CHECK(jobs("critical", "pending") == 1.0);
  CHECK(value("msomni_sched_preemptions_total", {{"class", "regular"}}) == 1.0);
  advance(2min);  // the victim's checkpoint: the critical job starts after 2 min in the queue
  CHECK(jobs("critical", "running") == 1.0);
  CHECK(jobs("regular", "pending") == 1.0);
  CHECK(value("msomni_sched_queue_wait_seconds", {{"class", "critical"}}) == 1.0);
  CHECK(sum_of("msomni_sched_queue_wait_seconds", "critical") == doctest::Approx(120));
  finish(1);  // the regular job resumes: not its first start, so no second wait
  CHECK(jobs("critical", "running") == 0.0);
  CHECK(jobs("regular", "running") == 1.0);
  CHECK(value("msomni_sched_queue_wait_seconds", {{"class", "regular"}}) == 1.0);
  CHECK(value("msomni_sched_preemptions_total", {{"class", "regular"}}) == 1.0);
  // The shell accounts for its messages as actor "scheduler".
  const auto submits = value("msomni_actor_messages_total", {{"actor", "scheduler"}, {"message", "job_submit"}});
  REQUIRE(submits);
  CHECK(*submits == 2.0);
}

TEST_CASE_FIXTURE(metered_scheduler, "metrics: guests, budget-hold windows and each running job's forecast, gone when it ends") {
  auto crit = job({submit("crit", job_class::critical, 8)});
  auto be = job({submit("be", job_class::best_effort, 2)});
  CHECK(metrics->forecast_jobs() == 0);
  for (int i = 0; i < 200; ++i) caf::anon_send(sched_actor, msg::job_step_report{"crit", 30, 15, 0, 0});
  run();
  advance(1800s);
  REQUIRE(be->last(command_kind::colocate));
  CHECK(value("msomni_sched_guests") == 1.0);
  CHECK(jobs("best_effort", "guest") == 1.0);
  const auto confidence = value("msomni_sched_idle_confidence", {{"job", "crit"}});
  REQUIRE(confidence);
  CHECK(*confidence > 0.5);
  CHECK(value("msomni_sched_idle_window_seconds", {{"job", "crit"}}) == 0.0);  // data waits, no phase
  CHECK(value("msomni_sched_budget_holds_total") == 0.0);
  // As in the slowdown-budget case above: 100 s lost by 5400 s, past 1% of the run.
  for (int i = 0; i < 60; ++i) caf::anon_send(sched_actor, msg::job_step_report{"crit", 30, 15, 0, 0});
  run();
  advance(1800s);
  for (int i = 0; i < 200; ++i) caf::anon_send(sched_actor, msg::job_step_report{"crit", 30.5, 15, 0, 0});
  run();
  advance(1800s);
  REQUIRE(be->last(command_kind::evict_guest));
  CHECK(value("msomni_sched_guests") == 0.0);
  CHECK(value("msomni_sched_budget_holds_total") == 1.0);
  advance(1800s);  // 100 s of 7200 s: still past 1%, held another window
  CHECK(value("msomni_sched_budget_holds_total") == 2.0);
  CHECK(status().budget_holds == 1);  // the one time it went past its budget
  finish(0);
  CHECK(metrics->forecast_jobs() == 0);
  CHECK_FALSE(value("msomni_sched_idle_confidence", {{"job", "crit"}}));
  CHECK(jobs("critical", "running") == 0.0);
}

TEST_CASE_FIXTURE(metered_scheduler, "a job that stopped with a checkpoint is listed as stopped and resumes from its step when submitted again") {
  job_script js{submit("train", job_class::regular, 8)};
  js.checkpoint_step = 698;
  auto first = job(js);
  REQUIRE(first->last(command_kind::start));
  CHECK(value("msomni_sched_ended_jobs_capacity") == 256);
  CHECK(value("msomni_sched_ended_jobs", {{"end", "stopped"}}) == 0);
  advance(30s);
  stop(0);
  auto st = status();
  CHECK(st.gpus_free == 8);
  CHECK(st.jobs.empty());
  CHECK(st.ended_capacity == 256);
  REQUIRE(st.ended.size() == 1);
  CHECK(st.ended[0].job == "train");
  CHECK(st.ended[0].phase == "stopped");
  CHECK(st.ended[0].checkpoint_step == 698);
  CHECK(st.ended[0].exit_code == 5);
  CHECK(st.ended[0].since_s == doctest::Approx(clock_s()));
  CHECK(value("msomni_sched_ended_jobs", {{"end", "stopped"}}) == 1);
  // A repeat of the report, and the stopped job's actor going away, change nothing.
  stop(0);
  caf::anon_send_exit(spawned.at(0), caf::exit_reason::kill);
  run();
  CHECK(status().ended.at(0).phase == "stopped");
  // The same job id submitted again (a new msomni job): it leaves the stopped list and its
  // start resumes from the step.
  auto again = job(js);
  const auto* start = again->last(command_kind::start);
  REQUIRE(start);
  CHECK(start->resume_step == 698);
  st = status();
  CHECK(st.ended.empty());
  CHECK(value("msomni_sched_ended_jobs", {{"end", "stopped"}}) == 0);
  // It finishes; another job's actor dies without a word: finished and lost, newest first.
  finish(1);
  job({submit("gone", job_class::best_effort, 2)});
  caf::anon_send_exit(spawned.at(2), caf::exit_reason::kill);
  run();
  st = status();
  REQUIRE(st.ended.size() == 2);
  CHECK(st.ended[0].job == "gone");
  CHECK(st.ended[0].phase == "lost");
  CHECK(st.ended[1].job == "train");
  CHECK(st.ended[1].phase == "finished");
  CHECK(value("msomni_sched_ended_jobs", {{"end", "finished"}}) == 1);
  CHECK(value("msomni_sched_ended_jobs", {{"end", "lost"}}) == 1);
  CHECK(value("msomni_sched_ended_jobs_dropped_total") == 0);
}
