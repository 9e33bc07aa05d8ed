// The runner simulation (see job_runner_sim.hpp).
#include "job_runner_sim.hpp"

#include "job_runner_core.hpp"
#include "scheduler_types.hpp"

#include "core/rng.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

namespace msomni::job_runner::sim {

namespace {

using ms = std::chrono::milliseconds;
using sched::command_kind;

constexpr int64_t poll_ms = 100;          // the shell's poll of the command
// The job's end, and an eviction, wait this long for a command asked to stop.
constexpr int64_t stop_grace_ms = std::chrono::duration_cast<std::chrono::milliseconds>(command_stop_grace).count();
constexpr uint32_t cluster_gpus = 16;
const std::string job_id = "j1";

// The command, as a process: it trains from the run directory's checkpoint to its last step.
struct process {
  uint64_t id = 0;         // launches so far: an event of an earlier process is stale
  bool alive = false;      // the process runs
  bool reported = true;    // its end was reported to the core (or there was never one)
  std::vector<uint32_t> gpus;
  uint32_t world = 0;      // msomni-run's world size now
  bool resizing = false;   // msomni-run's phase is "resizing"
  uint64_t resume = 0;
  int64_t since_ms = 0;
  bool ignores_term = false;
  std::optional<int64_t> termed_at_ms;  // it ignored a SIGTERM sent then
  std::optional<int64_t> evicted_at_ms;  // asked to give its GPUs back (a kill is promised)
};

// What the current scheduler instance believes about the job.
struct scheduler_view {
  enum class phase { unknown, pending, running, draining, done } at = phase::unknown;
  bool guest = false;
  uint64_t epoch = 0;
  std::vector<uint32_t> gpus;
  uint32_t replicas = 0, keep = 0;
  uint64_t resume = 0;
};
using phase = scheduler_view::phase;

// A drain or shrink notice the shell handed to the core.
struct notice {
  bool shrink = false;
  uint32_t keep = 0;
  int64_t at_ms = -1;
  uint64_t registration = 0;  // the job's registration (submit or rejoin) it came under
};

const char* kind_name(command_kind k) { return sched::to_string(k); }

std::string gpus_text(const std::vector<uint32_t>& g) { return "[" + join(g) + "]"; }

class world {
 public:
  explicit world(const options& o) : o_(o), rng_(rng_stream::derive(o.seed, "job-runner-sim")), core_(spec_of(o)) {}

  result run() {
    instance_ = 1;
    shell_sched_ = 1;
    carry(core_.start(now()));
    at(10'000, [this] { carry(core_.on_quiet_check()); });
    if (rng_.uniform() < o_.crash_chance)
      for (uint64_t n = 1 + rng_.below(2); n > 0; --n) at(jitter(500, o_.fault_span_ms), [this] { crash(); });
    while (!queue_.empty() && !(ended_ && !proc_.alive)) {
      auto it = queue_.begin();
      if (it->first.first > o_.horizon_ms) break;
      now_ms_ = it->first.first;
      auto fn = std::move(it->second);
      queue_.erase(it);
      fn();
      ++r_.events;
      check_bounds();
    }
    if (!ended_)
      violation(std::string("hang: the job has not ended ") +
                (queue_.empty() ? "and nothing more happens" : "by the horizon") + " (" + state_text() + ")");
    else if (proc_.alive)
      violation("the command still runs after the job ended");
    return r_;
  }

 private:
  static job_spec spec_of(const options& o) {
    job_spec s;
    s.id = job_id;
    s.gpus = o.max_replicas * o.gpus_per_replica;
    s.gpus_per_replica = o.gpus_per_replica;
    s.min_replicas = o.min_replicas;
    s.command = {"train"};
    s.run_dir = "/runs/j1";
    s.reconnect_s = o.reconnect_s;
    s.resize_in_place = o.resize_in_place;
    return s;
  }

  // -- the event queue -------------------------------------------------------------------
  time_point now() const { return time_point{} + ms(now_ms_); }
  void at(int64_t t, std::function<void()> fn) { queue_.emplace(std::pair{t, seq_++}, std::move(fn)); }
  void after(int64_t d, std::function<void()> fn) { at(now_ms_ + d, std::move(fn)); }
  int64_t jitter(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_.below(uint64_t(hi - lo + 1))); }
  bool chance(double p) { return rng_.uniform() < p; }
  void note(const std::string& what) {
    if (o_.trace) r_.trace.push_back(std::to_string(now_ms_) + " " + what);
  }
  void violation(const std::string& what) {
    note("VIOLATION " + what);
    r_.violations.push_back("seed " + std::to_string(o_.seed) + ", event " + std::to_string(r_.events) +
                            ", t=" + std::to_string(now_ms_) + " ms: " + what);
  }
  std::string state_text() const {
    return "command " + std::string(core_.command_running() ? "running" : "not running") + ", stopping " +
           std::to_string(int(core_.why())) + ", registered " + std::to_string(core_.registered()) +
           ", process " + (proc_.alive ? "alive" : "gone") + (proc_.ignores_term ? " (ignores SIGTERM)" : "") +
           ", scheduler instance " + std::to_string(instance_) + " phase " + std::to_string(int(sv_.at));
  }

  // -- the shell: the core's actions, carried out in order --------------------------------
  void carry(const actions& acts) {
    for (const auto& a : acts) {
      if (ended_ && !std::holds_alternative<say>(a)) {
        violation("an action after the job ended (action " + std::to_string(a.index()) + ")");
        continue;
      }
      if (const auto* s = std::get_if<say>(&a)) {
        note("say: " + s->text);
        if (s->text.find(" in place to ") != std::string::npos) ++r_.in_place;
      }
      else if (const auto* t = std::get_if<tell_scheduler>(&a)) tell(t->message);
      else if (const auto* l = std::get_if<launch>(&a)) start_command(*l);
      else if (const auto* g = std::get_if<signal_command>(&a)) signal(g->sig);
      else if (const auto* r = std::get_if<ask_resize>(&a)) ask_resize_of(*r);
      else if (const auto* p = std::get_if<poll_resize_status>(&a))
        after(std::chrono::duration_cast<ms>(p->after).count(), [this] { deliver([this] { return core_.on_resize_poll_due(now()); }); });
      else if (std::holds_alternative<ask_status>(a)) ask_status_of();
      else if (const auto* c = std::get_if<reconnect_later>(&a))
        after(std::chrono::duration_cast<ms>(c->after).count(), [this] { deliver([this] { return core_.on_reconnect_due(now()); }); });
      else if (std::holds_alternative<find_scheduler>(a)) find();
      else if (std::holds_alternative<rewind_metrics>(a)) note("rewind metrics");
      else if (const auto* f = std::get_if<finish_job>(&a)) finish(*f);
      else if (const auto* k = std::get_if<kill_if_still_running>(&a)) {
        const uint64_t run = k->run;
        if (proc_.alive && !proc_.evicted_at_ms) proc_.evicted_at_ms = now_ms_;
        if (o_.sabotage_drop_stop_timer) continue;
        after(std::chrono::duration_cast<ms>(k->after).count(), [this, run] { deliver([this, run] { return core_.on_stop_overdue(run); }); });
      }
    }
  }
  // An event for the core, unless the shell has quit (the job ended).
  template <class F>
  void deliver(F call) {
    if (!ended_) carry(call());
  }

  void tell(const scheduler_message& m) {
    const bool registers = std::holds_alternative<msg::job_submit>(m) || std::holds_alternative<msg::job_rejoin>(m);
    const char* what = std::visit([](const auto& x) -> const char* {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, msg::job_submit>) return "job_submit";
      else if constexpr (std::is_same_v<T, msg::job_rejoin>) return "job_rejoin";
      else if constexpr (std::is_same_v<T, msg::job_released>) return "job_released";
      else return "job_finished";
    }, m);
    note(std::string("-> scheduler: ") + what);
    if (shell_sched_ == 0) violation(std::string(what) + " sent while no scheduler is known");
    else if (!registers && told_ != shell_sched_)
      violation(std::string(what) + " sent to a scheduler that does not know the job (not registered)");
    if (registers) {
      told_ = shell_sched_;
      ++registration_;
      if (std::holds_alternative<msg::job_submit>(m)) {
        alloc_.reset();  // a new registration: nothing is the job's until a start,
        notices_.clear();  // and its epochs count from the start again
        if (seen_submit_) ++r_.resubmits;
        seen_submit_ = true;
      } else {  // the restarted scheduler knows the job on the GPUs it says it holds
        const auto& j = std::get<msg::job_rejoin>(m);
        alloc_ = j.held;
        alloc_replicas_ = j.replicas;
        alloc_host_.clear();
        ++r_.rejoins;
      }
    }
    if (const auto* rel = std::get_if<msg::job_released>(&m)) released_sent(*rel);
    const int inst = shell_sched_;
    to_sched_last_ = std::max(to_sched_last_, now_ms_ + jitter(1, 40));
    at(to_sched_last_, [this, inst, m] {
      if (instance_ == inst) scheduler_receives(m);
    });
  }

  // A job_released: the command it releases has ended (a drain, a restart on fewer
  // replicas), or, shrunk in place, it runs on the replicas kept.
  // The notice it answers is the newest one at or below its epoch.
  void released_sent(const msg::job_released& rel) {
    auto it = notices_.upper_bound(rel.epoch);
    if (it == notices_.begin()) return violation("job_released at epoch " + std::to_string(rel.epoch) + " with no notice to answer");
    const notice n = (--it)->second;
    const bool running = proc_.alive || !proc_.reported;
    const bool in_place = n.shrink && proc_.alive && !proc_.resizing && proc_.world <= n.keep;
    if (running && proc_.since_ms <= n.at_ms && !in_place)
      violation("job_released while the command it releases still runs (launched at " + std::to_string(proc_.since_ms) +
                " ms, notice at " + std::to_string(n.at_ms) + " ms)");
    // An older epoch's, or a previous scheduler instance's: stale to the scheduler.
    if (!alloc_ || it->first != notices_.rbegin()->first || n.registration != registration_) return;
    if (n.shrink) keep_only(n.keep);
    else alloc_.reset();
  }
  void keep_only(uint32_t replicas) {
    if (!alloc_) return;
    alloc_->resize(std::min<size_t>(alloc_->size(), size_t{replicas} * o_.gpus_per_replica));
    alloc_replicas_ = replicas;
  }

  void start_command(const launch& l) {
    note("launch on " + gpus_text(l.gpus) + " replicas " + std::to_string(l.replicas));
    ++r_.launches;
    if (proc_.alive || !proc_.reported) violation("launch while a command runs");
    if (!alloc_) violation("launch on " + gpus_text(l.gpus) + " with no start, colocate or resize to follow");
    else if (l.gpus != *alloc_ || l.replicas != alloc_replicas_ || l.host != alloc_host_)
      violation("launch on " + gpus_text(l.gpus) + " (" + std::to_string(l.replicas) + " replicas, host '" + l.host +
                "'), but the scheduler's last word is " + gpus_text(*alloc_) + " (" + std::to_string(alloc_replicas_) +
                " replicas, host '" + alloc_host_ + "')");
    proc_ = process{};
    proc_.id = ++launches_;
    proc_.reported = false;
    proc_.since_ms = now_ms_;
    const uint64_t id = proc_.id;
    if (chance(o_.launch_fail_chance)) {  // cannot start: the next poll reports 127
      note("the command cannot start");
      after(jitter(1, poll_ms), [this, id] { reported_end(id, 127); });
      return;
    }
    proc_.alive = true;
    proc_.gpus = l.gpus;
    proc_.world = l.replicas;
    proc_.resume = checkpoint_;
    proc_.since_ms = now_ms_;
    proc_.ignores_term = chance(o_.ignore_term_chance);
    const int64_t run_ms = int64_t(o_.total_steps - std::min(checkpoint_, o_.total_steps)) * o_.step_ms;
    if (chance(o_.fail_chance)) after(jitter(1, std::max<int64_t>(run_ms, 1)), [this, id] { process_ends(id, 1 + int(rng_.below(2)), false); });
    after(run_ms + jitter(100, 2000), [this, id] { process_ends(id, 0, true); });
  }

  uint64_t step_now() const {
    if (!proc_.alive) return checkpoint_;
    return std::min(o_.total_steps, proc_.resume + uint64_t((now_ms_ - proc_.since_ms) / o_.step_ms));
  }
  // The run directory's newest checkpoint (one every 10 steps).
  uint64_t checkpoint() {
    checkpoint_ = std::max(checkpoint_, step_now() / 10 * 10);
    return checkpoint_;
  }

  // The process ends; the shell's next poll notices it.
  void process_ends(uint64_t id, int code, bool saves) {
    if (proc_.id != id || !proc_.alive) return;
    checkpoint();
    if (saves) checkpoint_ = std::max(checkpoint_, step_now());
    proc_.alive = false;
    if (proc_.termed_at_ms && !ended_) r_.ignored_term_ms += uint64_t(now_ms_ - *proc_.termed_at_ms);
    // An evicted command ends within the grace, the kill and a poll: its GPUs are not held on.
    // (Once the job has ended, its end's own grace applies.)
    if (proc_.evicted_at_ms && !ended_ && now_ms_ - *proc_.evicted_at_ms > stop_grace_ms + 100)
      violation("an evicted command ran " + std::to_string(now_ms_ - *proc_.evicted_at_ms) +
                " ms after its SIGTERM (grace " + std::to_string(stop_grace_ms) + " ms)");
    note("the command ends with " + std::to_string(code));
    if (o_.sabotage_drop_killed_end && code == 137) return;
    after(jitter(1, poll_ms), [this, id, code] { reported_end(id, code); });
  }
  void reported_end(uint64_t id, int code) {
    if (proc_.id != id || proc_.reported || ended_) return;
    proc_.reported = true;
    carry(core_.on_command_ended(code, checkpoint(), now()));
  }

  void signal(stop_signal sig) {
    note(sig == stop_signal::kill ? "SIGKILL" : "SIGTERM");
    if (!proc_.alive) return;  // nothing runs: the shell's handle signals nothing
    const uint64_t id = proc_.id;
    if (sig == stop_signal::kill) {
      after(jitter(1, 30), [this, id] { process_ends(id, 137, false); });
      return;
    }
    if (o_.sabotage_end_at_sigterm) after(0, [this, id] { reported_end(id, 143); });
    if (proc_.ignores_term) {
      if (!proc_.termed_at_ms) ++r_.term_ignored;
      if (!proc_.termed_at_ms) proc_.termed_at_ms = now_ms_;
      return;
    }
    after(jitter(50, 5000), [this, id] { process_ends(id, chance(0.5) ? 0 : 143, true); });
  }

  // The job's end: a command asked to stop gets the grace period, then the handle kills it.
  void finish(const finish_job& f) {
    note("the job ends with " + std::to_string(f.code) + ": " + f.why);
    ended_ = true;
    r_.ended = true;
    r_.code = f.code;
    r_.why = f.why;
    if (f.why.empty()) violation("the job ended without a reason");
    if (f.why.find("did not come back") != std::string::npos) {
      const int64_t waited = now_ms_ - lost_at_, bound = int64_t(o_.reconnect_s * 1000);
      if (waited < bound || waited > bound + 1000 + 50)
        violation("gave up on the scheduler after " + std::to_string(waited) + " ms (reconnect_s " +
                  std::to_string(o_.reconnect_s) + ")");
    }
    if (!proc_.alive) return;
    const uint64_t id = proc_.id;
    after(f.grace ? stop_grace_ms : 0, [this, id] { process_ends(id, 137, false); });
  }

  // -- msomni-run's control endpoint --------------------------------------------------------
  void ask_resize_of(const ask_resize& r) {
    note(std::string("ask msomni-run to scale ") + (r.shrink ? "down" : "up") + " to " + std::to_string(r.replicas));
    control_ = 0;
    if (!proc_.alive || chance(0.1))
      return carry(core_.on_resize_refused("no control endpoint in /runs/j1/control.json answers"));
    control_ = proc_.id;
    const uint64_t id = proc_.id;
    const uint32_t to = r.replicas;
    after(jitter(5, 500), [this, id, to] {
      if (ended_) return;
      if (proc_.id != id || !proc_.alive) return carry(core_.on_resize_refused("no answer from msomni-run: down"));
      if (chance(0.15)) return carry(core_.on_resize_refused("the job is finishing"));
      proc_.resizing = true;
      if (!chance(0.1))  // else it gets stuck: the core's deadline is the way out
        after(jitter(500, 40'000), [this, id, to] {
          if (proc_.id != id || !proc_.alive) return;
          proc_.world = to;
          proc_.resizing = false;
        });
      carry(core_.on_resize_accepted());
    });
  }
  void ask_status_of() {
    if (control_ == 0) return carry(core_.on_resize_refused("msomni-run's control endpoint is not known"));
    const uint64_t id = control_;
    after(jitter(2, 200), [this, id] {
      if (ended_) return;
      if (proc_.id != id || !proc_.alive) return carry(core_.on_resize_refused("msomni-run's status: down"));
      const bool ok = !chance(0.05);
      // msomni-run's status reply, now and then with a field of the wrong type.
      nlohmann::ordered_json reply{{"world", proc_.world}, {"phase", proc_.resizing ? "resizing" : "running"},
                                   {"step", step_now()}};
      if (chance(0.03)) reply = nlohmann::ordered_json{{"world", std::to_string(proc_.world)}};
      const std::string json = reply.dump();
      carry(core_.on_resize_status(ok, ok ? json : "", checkpoint()));
    });
  }

  // -- the scheduler, lost and found ----------------------------------------------------------
  void crash() {
    if (instance_ == 0) return;
    note("the scheduler crashes");
    ++r_.crashes;
    const int inst = instance_;
    instance_ = 0;
    ++gen_;
    after(jitter(1, 300), [this, inst] {  // the shell's down message
      if (shell_sched_ != inst || ended_) return;
      shell_sched_ = 0;
      lost_at_ = now_ms_;
      away_ = true;
      carry(core_.on_scheduler_lost(now()));
    });
    if (chance(o_.never_back_chance)) return;
    after(jitter(200, std::max<int64_t>(500, int64_t(o_.reconnect_s * 1500))), [this] {
      instance_ = ++instances_;
      sv_ = scheduler_view{};
      to_job_last_ = now_ms_;
      note("a scheduler instance starts");
    });
  }

  // find_scheduler: the info file names the running instance (now and then unusably).
  void find() {
    if (chance(0.1)) return carry(core_.on_scheduler_not_found(std::string("unusable address in the info file")));
    if (instance_ == 0) return carry(core_.on_scheduler_not_found(std::nullopt));
    note("found scheduler instance " + std::to_string(instance_));
    shell_sched_ = instance_;
    away_ = false;
    carry(core_.on_scheduler_found(now()));
  }

  void check_bounds() {
    if (away_ && !ended_ && o_.reconnect_s > 0 && now_ms_ > lost_at_ + int64_t(o_.reconnect_s * 1000) + 1100 &&
        !reconnect_reported_) {
      reconnect_reported_ = true;
      violation("still waiting for the scheduler " + std::to_string(now_ms_ - lost_at_) + " ms after losing it (reconnect_s " +
                std::to_string(o_.reconnect_s) + ")");
    }
  }

  // -- the scheduler's decisions ------------------------------------------------------------
  // A message of the current instance to the job: in order, after a delay; lost if the
  // instance crashes first.
  void to_job(std::function<void()> fn) {
    const int inst = instance_;
    to_job_last_ = std::max(to_job_last_, now_ms_ + jitter(1, 40));
    at(to_job_last_, [this, inst, fn = std::move(fn)] {
      if (instance_ == inst && !ended_) fn();
    });
  }
  void send_command(msg::job_command c) {
    ++r_.commands;
    note(std::string("scheduler sends ") + kind_name(c.kind) + " epoch " + std::to_string(c.epoch) + " " +
         gpus_text(c.gpus) + " keep " + std::to_string(c.keep_replicas));
    to_job([this, c] { command_arrives(c); });
  }
  msg::job_command make(command_kind k, uint64_t epoch) {
    msg::job_command c;
    c.kind = k;
    c.job = job_id;
    c.epoch = epoch;
    c.reason = "simulated";
    return c;
  }
  // A scheduler timer: stale once the instance or its view of the job changed.
  void sched_later(int64_t d, std::function<void()> fn) {
    const uint64_t g = gen_;
    const int inst = instance_;
    after(d, [this, g, inst, fn = std::move(fn)] {
      if (g == gen_ && inst == instance_ && instance_ != 0) fn();
    });
  }

  void scheduler_receives(const scheduler_message& m) {
    if (const auto* rel = std::get_if<msg::job_released>(&m)) {
      if (sv_.at != phase::draining || rel->epoch != sv_.epoch) return;  // repeated or stale: nothing changes
      ++gen_;
      sv_.resume = rel->checkpoint_step;
      return complete_drain();
    }
    ++gen_;
    if (std::holds_alternative<msg::job_submit>(m)) {
      sv_.at = phase::pending;
      sv_.guest = false;
      return decide_later();
    }
    if (const auto* j = std::get_if<msg::job_rejoin>(&m)) {
      sv_.epoch = j->epoch;
      if (chance(0.8)) {
        sv_.at = phase::running;
        sv_.gpus = j->held;
        sv_.replicas = j->replicas;
        msg::job_command c = make(command_kind::adopted, sv_.epoch);
        c.gpus = j->held;
        c.replicas = j->replicas;
        send_command(c);
        return plan_disruption();
      }
      sv_.at = phase::pending;
      send_command(make(command_kind::requeue, sv_.epoch));
      return decide_later();
    }
    sv_.at = phase::done;  // job_finished
  }

  void complete_drain() {
    if (sv_.keep > 0) {
      sv_.gpus.resize(std::min<size_t>(sv_.gpus.size(), size_t{sv_.keep} * o_.gpus_per_replica));
      sv_.replicas = sv_.keep;
      sv_.keep = 0;
      sv_.at = phase::running;
      return plan_disruption();
    }
    sv_.at = phase::pending;
    decide_later();
  }

  void decide_later() {
    sched_later(jitter(50, 3000), [this] { decide(); });
  }
  std::vector<uint32_t> pick(size_t n, std::vector<uint32_t> have = {}) {
    while (have.size() < n) {
      const auto g = uint32_t(rng_.below(cluster_gpus));
      if (std::find(have.begin(), have.end(), g) == have.end()) have.push_back(g);
    }
    return have;
  }
  uint32_t replicas_between(uint32_t lo, uint32_t hi) { return lo + uint32_t(rng_.below(hi - lo + 1)); }

  // A pending job: rejected (rarely), started, or placed as a guest.
  void decide() {
    ++gen_;
    if (chance(o_.reject_chance)) {
      sv_.at = phase::done;
      return send_command(make(command_kind::reject, sv_.epoch));
    }
    start_as(chance(o_.guest_chance) ? command_kind::colocate : command_kind::start);
  }
  void start_as(command_kind k) {
    msg::job_command c = make(k, ++sv_.epoch);
    sv_.guest = k == command_kind::colocate;
    sv_.replicas = c.replicas = replicas_between(o_.min_replicas, o_.max_replicas);
    sv_.gpus = c.gpus = pick(size_t{c.replicas} * o_.gpus_per_replica);
    c.resume_step = sv_.resume;
    if (sv_.guest) {
      c.host = "crit";
      c.share = 0.5;
    }
    sv_.at = phase::running;
    send_command(c);
    plan_disruption();
  }

  // While it runs, the job may be drained, shrunk, grown, evicted; now and then the
  // scheduler sends a command of any kind out of turn (its own view follows what it sent).
  void plan_disruption() {
    if (now_ms_ > o_.fault_span_ms || !chance(std::min(0.9, o_.disruptions / 5))) return;
    sched_later(jitter(500, 60'000), [this] { disrupt(); });
  }
  void disrupt() {
    ++gen_;
    std::vector<command_kind> kinds;
    if (chance(o_.chaos_chance)) {
      ++r_.chaos;
      kinds = {command_kind::start, command_kind::colocate, command_kind::preempt, command_kind::resize,
               command_kind::evict_guest, command_kind::force_release, command_kind::requeue, command_kind::adopted};
      if (chance(0.15)) return drain();
    } else {
      if (sv_.at != phase::running) return;
      if (chance(0.3)) return drain();
      if (sv_.guest) kinds.push_back(command_kind::evict_guest);
      if (sv_.replicas > o_.min_replicas && !sv_.guest) kinds.push_back(command_kind::preempt);
      if (sv_.replicas < o_.max_replicas && !sv_.guest) kinds.push_back(command_kind::resize);
      if (kinds.empty()) return drain();
    }
    switch (kinds[rng_.below(kinds.size())]) {
      case command_kind::start: return start_as(command_kind::start);
      case command_kind::colocate: return start_as(command_kind::colocate);
      case command_kind::preempt: return shrink();
      case command_kind::resize: return grow();
      case command_kind::evict_guest:
      case command_kind::requeue: {
        const auto k = sv_.guest ? command_kind::evict_guest : command_kind::requeue;
        sv_.at = phase::pending;
        send_command(make(k, sv_.epoch));
        return decide_later();
      }
      case command_kind::force_release: {  // out of turn: it takes the GPUs back (only a shrink's keeps some)
        msg::job_command c = make(command_kind::force_release, sv_.epoch);
        sv_.keep = 0;
        ++r_.force_releases;
        send_command(c);
        return complete_drain();
      }
      default: {
        msg::job_command c = make(command_kind::adopted, sv_.epoch);
        c.gpus = sv_.gpus;
        return send_command(c);
      }
    }
  }
  // A drain period, past which the scheduler takes the GPUs back (force_release).
  void drain_deadline(double drain_s) {
    const uint64_t epoch = sv_.epoch;
    sched_later(int64_t(drain_s * 1000), [this, epoch] {
      ++gen_;
      msg::job_command c = make(command_kind::force_release, epoch);
      c.keep_replicas = sv_.keep;
      ++r_.force_releases;
      send_command(c);
      complete_drain();
    });
  }
  void drain() {
    const double drain_s = double(jitter(2, 30));
    sv_.at = phase::draining;
    sv_.keep = 0;
    const uint64_t epoch = ++sv_.epoch;
    to_job([this, epoch, drain_s] {
      note("preempt_notice epoch " + std::to_string(epoch) + " arrives");
      if (epoch >= core_.epoch()) notices_[epoch] = {false, 0, now_ms_, registration_};
      deliver([&] { return core_.on_preempt_notice({job_id, epoch, drain_s, "simulated"}, checkpoint()); });
    });
    ++r_.commands;
    drain_deadline(drain_s);
  }
  void shrink() {
    if (sv_.replicas <= 1 || sv_.guest) return drain();  // a guest is not shrunk
    msg::job_command c = make(command_kind::preempt, ++sv_.epoch);
    sv_.keep = c.keep_replicas = replicas_between(std::min(o_.min_replicas, sv_.replicas - 1), sv_.replicas - 1);
    c.drain_s = double(jitter(2, 40));
    sv_.at = phase::draining;
    send_command(c);
    drain_deadline(c.drain_s);
  }
  void grow() {
    msg::job_command c = make(command_kind::resize, ++sv_.epoch);
    sv_.replicas = c.replicas = replicas_between(std::min(sv_.replicas + 1, o_.max_replicas), o_.max_replicas);
    sv_.gpus = c.gpus = pick(size_t{c.replicas} * o_.gpus_per_replica, sv_.gpus);
    sv_.at = phase::running;
    send_command(c);
    plan_disruption();
  }

  // The shell hands a scheduler command to the core; the harness keeps the scheduler's last
  // word on the job's GPUs, which the next launch must use.
  void command_arrives(const msg::job_command& c) {
    note(std::string(kind_name(c.kind)) + " epoch " + std::to_string(c.epoch) + " arrives");
    if (c.epoch >= core_.epoch()) {
      switch (c.kind) {
        case command_kind::start:
        case command_kind::colocate:
        case command_kind::resize:
          alloc_ = c.gpus;
          alloc_replicas_ = c.replicas;
          if (c.kind != command_kind::resize)  // a grow keeps a guest a guest
            alloc_host_ = c.kind == command_kind::colocate ? c.host : "";
          break;
        case command_kind::preempt:
          notices_[c.epoch] = {true, c.keep_replicas, now_ms_, registration_};
          break;
        case command_kind::force_release:
          if (c.keep_replicas > 0) keep_only(c.keep_replicas);
          else alloc_.reset();
          break;
        case command_kind::evict_guest:
        case command_kind::requeue:
          alloc_.reset();
          break;
        default:
          break;
      }
    }
    deliver([&] { return core_.on_command(c, now()); });
  }

  options o_;
  rng_stream rng_;
  job_runner_core core_;
  result r_;
  std::map<std::pair<int64_t, uint64_t>, std::function<void()>> queue_;
  int64_t now_ms_ = 0;
  uint64_t seq_ = 0;
  // the scheduler
  int instance_ = 0, instances_ = 1;  // the running instance (0: none)
  scheduler_view sv_;
  uint64_t gen_ = 0;
  int64_t to_job_last_ = 0, to_sched_last_ = 0;
  // the shell
  int shell_sched_ = 0, told_ = 0;  // the instance it talks to (0: none), the one told of the job
  bool away_ = false, reconnect_reported_ = false, seen_submit_ = false;
  int64_t lost_at_ = 0;
  uint64_t control_ = 0;  // the process whose control endpoint the shell found
  bool ended_ = false;
  // the command
  process proc_;
  uint64_t launches_ = 0, checkpoint_ = 0;
  // the scheduler's last word on the job's GPUs, as the shell received it
  std::optional<std::vector<uint32_t>> alloc_;
  uint32_t alloc_replicas_ = 0;
  std::string alloc_host_;
  std::map<uint64_t, notice> notices_;  // by epoch
  uint64_t registration_ = 0;
};

}  // namespace

result run(const options& o) { return world(o).run(); }

options seeded(uint64_t seed) {
  auto rng = rng_stream::derive(seed, "job-runner-sim-options");
  options o;
  o.seed = seed;
  const double reconnect[] = {0, 3, 30, 30, 120};
  o.reconnect_s = reconnect[rng.below(5)];
  o.resize_in_place = rng.below(2) == 1;
  o.gpus_per_replica = 1 + uint32_t(rng.below(2));
  o.max_replicas = 2 + uint32_t(rng.below(3));
  o.min_replicas = 1 + uint32_t(rng.below(2));
  o.total_steps = 200 + rng.below(1001);
  o.fault_span_ms = int64_t(o.total_steps) * o.step_ms * 3 / 2;  // about as long as the job runs
  return o;
}

}  // namespace msomni::job_runner::sim
