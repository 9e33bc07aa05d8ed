// The elastic job simulation (see elastic_sim.hpp).
#include "elastic_sim.hpp"

#include "rank_protocol.hpp"
#include "record_lineage.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace msomni::orchestrator::sim {

namespace {

using ms = std::chrono::milliseconds;
constexpr int64_t tick_ms = 200;  // the shell's tick

constexpr uint64_t no_state = std::numeric_limits<uint64_t>::max();  // a joiner's, until its epoch forms

// A rank process. Its elastic protocol is the real one (rank_worker::rank_protocol); the
// harness plays the rank's shell: the plan inbox, the ring, the steps and the checkpoints.
struct rank_proc {
  rank_proc(std::string n, std::string on, rank_worker::rank_protocol_settings s)
      : name(std::move(n)), node(std::move(on)), protocol(std::move(s)) {}
  std::string name, node;
  rank_worker::rank_protocol protocol;
  bool alive = true;
  bool ready = false;
  bool left = false;     // sent rank_left or rank_failed; the process exits
  bool failed = false;   // it sent rank_failed: its exit is a death its agent reports
  uint64_t joined = 0;   // the epoch whose ring it joined (0: none yet)
  std::vector<std::string> members;  // of that epoch
  uint64_t step = 0;     // no_state: a joiner whose state comes from members[0]
  bool wants_step = false;  // carried out run_step: steps once every member of its epoch does
  std::optional<rank_worker::rank_command> wait;  // the wait it is in (for a plan), if any
  uint64_t waits = 0;    // counts waits and takes: a deadline of an earlier wait is stale
  // Plans received and not taken, as the rank's plan_inbox keeps them: one per epoch, and
  // none at or below the newest epoch taken.
  std::map<uint64_t, msg::join_world> inbox;
  uint64_t taken = 0;
  uint64_t superseded = 0;  // the newest rollback received: collectives of older epochs fail
};

class world {
 public:
  explicit world(const options& o)
      : o_(o), rng_(rng_stream::derive(o.seed, "elastic-sim")), core_(o.job) {}

  result run() {
    for (int n = 0; n < o_.nodes; ++n) {
      const std::string node = "node-" + std::to_string(n);
      agents_alive_[node] = true;
      at(jitter(5, 50), [this, node] {
        apply(core_.on_agent({node, "rack-" + std::to_string(node.back() % 2), "sw", o_.slots, true}, now()));
        after(o_.heartbeat_ms, [this, node] { heartbeat(node); });
      });
    }
    plan_faults();
    for (int64_t t = tick_ms; t < o_.horizon_ms; t += tick_ms) at(t, [this] { apply(core_.on_tick(now())); });
    while (!queue_.empty() && !r_.finished) {
      auto it = queue_.begin();
      now_ms_ = it->first.first;
      auto fn = std::move(it->second);
      queue_.erase(it);
      fn();
      ++r_.events;
      check_core();
    }
    if (!r_.finished) violation("hang: the job neither finished nor failed within " + std::to_string(o_.horizon_ms) + " ms");
    if (r_.finished && r_.ok && r_.reason.rfind("finished", 0) == 0 && history_.size() != o_.job.total_steps) {
      // The job ends when every member has left or is down. A rank 0 declared down after its
      // last records went out (its node agent died as the job ended) can leave them in flight
      // then: counted, not a violation (the state is complete; only metrics lines are late).
      // Anything else short is a lost step.
      if (history_.size() + 1 == o_.job.total_steps && rank0_lost_at_end_ && records_in_flight_ > 0)
        ++r_.records_late_at_finish;
      else
        violation("finished with " + std::to_string(history_.size()) + " of " + std::to_string(o_.job.total_steps) +
                  " steps journaled");
    }
    if (r_.finished && !r_.ok && r_.reason.empty()) violation("failed without a reason");
    r_.last_step = history_.empty() ? 0 : history_.back();
    return r_;
  }

 private:
  // -- the event queue -----------------------------------------------------------------
  time_point now() const { return time_point{} + ms(now_ms_); }
  void at(int64_t t, std::function<void()> fn) { queue_.emplace(std::pair{t, seq_++}, std::move(fn)); }
  void after(int64_t d, std::function<void()> fn) { at(now_ms_ + d, std::move(fn)); }
  int64_t jitter(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_.below(uint64_t(hi - lo + 1))); }
  // A message on the channel `from` -> `to`: delivered in order, after a random delay.
  void send(const std::string& from, const std::string& to, std::function<void()> fn) {
    auto& last = channel_[{from, to}];
    last = std::max(last, now_ms_ + jitter(0, 30));
    at(last, std::move(fn));
  }
  void note(const std::string& what) {
    if (o_.trace) r_.trace.push_back(std::to_string(now_ms_) + " " + what);
  }
  void violation(std::string what) {
    r_.violations.push_back("t=" + std::to_string(now_ms_) + " ms: " + std::move(what));
  }

  // -- faults ------------------------------------------------------------------------------
  void plan_faults() {
    const int64_t span = 40 * o_.step_ms * static_cast<int64_t>(o_.job.total_steps) / 20;
    const auto count = [&](double expected) {
      uint64_t n = 0;
      for (int i = 0; i < 8; ++i) n += rng_.uniform() < expected / 8 ? 1 : 0;
      return n;
    };
    for (uint64_t i = count(o_.rank_kills); i > 0; --i) at(jitter(50, span), [this] { kill_random_rank(); });
    if (rng_.uniform() < o_.agent_kill_chance) at(jitter(100, span), [this] { kill_random_agent(); });
    if (rng_.uniform() < o_.agent_silence_chance) at(jitter(100, span), [this] { silence_random_agent(); });
    for (uint64_t i = count(o_.scale_requests); i > 0; --i)
      at(jitter(50, span), [this] {
        ++r_.scale_requests;
        const int64_t to = o_.job.min_replicas + static_cast<int64_t>(rng_.below(uint64_t(o_.job.max_replicas - o_.job.min_replicas + 1)));
        apply(core_.scale_to(to, ms(jitter(200, 3000)), now()).actions);
      });
    if (rng_.uniform() < o_.stop_chance) at(jitter(100, span), [this] { apply(core_.stop(now()).actions); });
  }

  void kill_random_rank() {
    std::vector<std::string> alive;
    for (const auto& [n, p] : procs_)
      if (p.alive && !p.left) alive.push_back(n);
    if (alive.empty()) return;
    kill(alive[rng_.below(alive.size())], "killed");
  }

  // Agents that are up and heard from.
  std::vector<std::string> healthy_agents() const {
    std::vector<std::string> out;
    for (const auto& [n, up] : agents_alive_)
      if (up && !silent_since_.count(n)) out.push_back(n);
    return out;
  }

  void kill_random_agent() {
    const auto alive = healthy_agents();
    if (alive.size() <= 1) return;  // keep one node
    const auto node = alive[rng_.below(alive.size())];
    agents_alive_[node] = false;
    for (auto& [n, p] : procs_)
      if (p.node == node && p.alive) kill(n, "its node agent died");
    after(jitter(10, 200), [this, node] {
      for (const auto& [n, p] : procs_)
        if (p.node == node && finished_ranks_.count(n)) rank0_lost_at_end_ = true;
      apply(core_.on_agent_down(node, "connection lost", now()));
    });
  }

  // The node hangs: its agent stops heartbeating and drops what it is sent, its ranks stop
  // answering (their peers' collectives fail), and nothing reports them down. Sometimes
  // the agent heartbeats again later, after the core has declared it down.
  void silence_random_agent() {
    const auto alive = healthy_agents();
    if (alive.size() <= 1) return;  // keep one node
    const auto node = alive[rng_.below(alive.size())];
    silent_since_[node] = now_ms_;
    ++r_.silences;
    note("goes silent: agent " + node);
    for (auto& [n, p] : procs_)
      if (p.node == node && p.alive) {
        p.alive = false;
        note("hangs: " + n);
        if (finished_ranks_.count(n)) rank0_lost_at_end_ = true;
        if (!p.left) after(jitter(5, 150), [this, name = n] { stall_peers_of(name); });
      }
    if (rng_.uniform() < 0.5)
      after(o_.job.agent_silence_limit.count() / 1'000'000 + jitter(500, 3000), [this, node] {
        note("heartbeats again: agent " + node);
        silent_since_.erase(node);
        after(o_.heartbeat_ms, [this, node] { heartbeat(node); });
      });
  }

  void heartbeat(const std::string& node) {
    if (!agents_alive_[node] || silent_since_.count(node) || now_ms_ > o_.horizon_ms) return;
    send(node, "control", [this, node] {
      if (!o_.sabotage_drop_heartbeats) core_.on_heartbeat(node, now());
    });
    after(o_.heartbeat_ms, [this, node] { heartbeat(node); });
  }

  // A rank process ends (killed, stopped, exited): the orchestrator sees it go down, and the
  // peers of its epoch see their collective fail.
  void kill(const std::string& name, const std::string& why) {
    auto& p = procs_.at(name);
    if (!p.alive) return;
    p.alive = false;
    ++r_.deaths;
    note("dies: " + name + " (" + why + ")");
    after(jitter(5, 150), [this, name, why] { apply(core_.on_rank_down(name, why, now())); });
    if (p.left && !p.failed) return;
    // Every rank whose epoch counts on it: its collective fails once the peer is seen down.
    after(jitter(5, 150), [this, name] { stall_peers_of(name); });
  }

  // Every rank whose running collective counts on `dead` sees it fail.
  void stall_peers_of(const std::string& dead) {
    for (auto& [n, q] : procs_)
      if (in_collective(q) && std::find(q.members.begin(), q.members.end(), dead) != q.members.end())
        collective_fails(q, "a peer is down");
  }

  // Joining an epoch's ring or training in it (a wait for a plan runs no collective).
  static bool in_collective(const rank_proc& q) {
    const auto phase = q.protocol.phase();
    return q.alive && !q.left && q.joined != 0 &&
           (phase == rank_worker::rank_phase::joining || phase == rank_worker::rank_phase::training);
  }

  void collective_fails(rank_proc& q, const std::string& why) {
    note(q.name + " stalls in epoch " + std::to_string(q.protocol.epoch()));
    carry_out(q, q.protocol.on_collective_error(q.step == no_state ? 0 : q.step, why, now()));
  }

  // -- the shell: the core's actions -------------------------------------------------------
  void apply(const std::vector<action>& acts) {
    for (const auto& a : acts) {
      if (const auto* p = std::get_if<send_plan>(&a)) {
        send_plan plan = *p;
        if (o_.sabotage_duplicate_member && r_.plans == 0 && !plan.plan.members.empty())
          plan.plan.members.push_back(plan.plan.members.front());
        on_plan_sent(plan.plan);
        for (const auto& to : plan.to) {
          const auto jw = plan.plan;
          send("control", to, [this, to, jw] { deliver_plan(to, jw); });
        }
      } else if (const auto* s = std::get_if<spawn_on_agent>(&a)) {
        const auto node = s->node, name = s->name;
        send("control", node, [this, node, name] { spawn(node, name); });
      } else if (const auto* k = std::get_if<stop_on_agent>(&a)) {
        const auto node = k->node, name = k->name;
        send("control", node, [this, node, name] {
          if (agents_alive_[node] && !silent_since_.count(node) && procs_.count(name)) kill(name, "stopped by its agent");
        });
      } else if (const auto* j = std::get_if<journal_event>(&a)) {
        note("journal " + j->kind + ": " + j->detail);
        if (j->kind == "recovery") ++r_.rollbacks;
        if (j->kind == "agent_down") on_agent_declared_down(j->detail);
      } else if (const auto* f = std::get_if<finish_job>(&a)) {
        r_.finished = true;
        r_.ok = f->ok;
        r_.reason = f->reason;
      }
    }
  }

  void on_plan_sent(const msg::join_world& p) {
    ++r_.plans;
    {
      std::string m;
      for (const auto& x : p.members) m += " " + x;
      note("plan " + std::to_string(p.epoch) + (p.source == msg::state_source::checkpoint ? " checkpoint" : " carry_on") + (p.checkpoint_first ? " ckpt_first" : "") + ":" + m);
    }
    if (p.epoch <= last_plan_epoch_)
      violation("epoch " + std::to_string(p.epoch) + " after epoch " + std::to_string(last_plan_epoch_));
    last_plan_epoch_ = std::max(last_plan_epoch_, p.epoch);
    std::set<std::string> seen(p.members.begin(), p.members.end());
    if (seen.size() != p.members.size()) violation("epoch " + std::to_string(p.epoch) + " names a member twice");
    const auto w = static_cast<int64_t>(p.members.size());
    if (w > 0) {
      if (w > o_.job.max_replicas || w < o_.job.min_replicas)
        violation("epoch " + std::to_string(p.epoch) + " has " + std::to_string(w) + " members, outside the bounds");
      if (p.grad_accum * w * o_.job.micro_batch != o_.job.global_batch)
        violation("epoch " + std::to_string(p.epoch) + ": grad_accum " + std::to_string(p.grad_accum) + " x " +
                  std::to_string(w) + " replicas does not make the global batch");
    }
    for (const auto& m : p.members) {
      if (!procs_.count(m) || !procs_.at(m).ready) violation("epoch " + std::to_string(p.epoch) + " names " + m + ", never ready");
      else if (const auto it = core_.members().find(m);
               it == core_.members().end() || it->second.state == member_state::left || it->second.state == member_state::dead)
        violation("epoch " + std::to_string(p.epoch) + " names " + m + ", which the core knows has left or is down");
    }
    if (p.source == msg::state_source::checkpoint) lineage_.on_rollback_plan(p.epoch);
  }

  // "NODE: why". Only a silent agent may be declared down for its silence.
  void on_agent_declared_down(const std::string& detail) {
    const auto node = detail.substr(0, detail.find(':'));
    declared_down_.insert(node);
    if (detail.find("no heartbeat") != std::string::npos && !silent_since_.count(node))
      violation("agent " + node + " declared down for silence, though it heartbeats (" + detail + ")");
  }

  // A step record of rank 0, as the orchestrator shell takes it (record_lineage decides).
  void on_record(uint64_t epoch, uint64_t step, uint32_t w) {
    note("record epoch " + std::to_string(epoch) + " step " + std::to_string(step));
    msg::step_record r;
    r.epoch = epoch;
    r.step = step;
    r.world_size = w;
    auto released = lineage_.on_record(r);
    journal_released(released.held);
    if (!released.record) return;  // held back
    // The first record of an epoch that loaded a checkpoint: the journal continues from it.
    if (auto it = loaded_at_.find(epoch); it != loaded_at_.end() && loaded_for_ != epoch) {
      loaded_for_ = epoch;
      if (it->second > history_.size())
        violation("epoch " + std::to_string(epoch) + " loaded step " + std::to_string(it->second) + " but only " +
                  std::to_string(history_.size()) + " steps were journaled");
      else
        history_.resize(it->second);
    }
    if (step != history_.size() + 1)
      violation("journaled step " + std::to_string(step) + " after step " + std::to_string(history_.size()) +
                " (epoch " + std::to_string(epoch) + "): a step lost or repeated");
    else
      history_.push_back(step);
    apply(core_.on_step(step, w, now()));
  }

  // Held records the lineage released: journaled where they continue the history.
  void journal_released(const std::vector<msg::step_record>& held) {
    for (const auto& h : held)
      if (h.step == history_.size() + 1) history_.push_back(h.step);
  }

  // -- node agents and rank processes --------------------------------------------------------
  void spawn(const std::string& node, const std::string& name) {
    if (!agents_alive_[node] || silent_since_.count(node)) return;  // the message reached a dead or hung agent
    procs_.insert_or_assign(name, rank_proc{name, node, {name, o_.job.total_steps, o_.first_plan_wait, o_.announced_plan_wait, o_.stalled_plan_wait}});
    after(jitter(20, 300), [this, name] {
      auto& q = procs_.at(name);
      if (!q.alive) return;
      if (rng_.uniform() < o_.start_failure_chance) return kill(name, "exited while starting");
      q.ready = true;
      const msg::rank_ready rr{name, q.node, "ucx://" + name, 1000, checkpoint_ > 0, checkpoint_};
      send(name, "control", [this, rr] { apply(core_.on_rank_ready(rr, now())); });
      carry_out(q, q.protocol.on_ready_sent(now()));
    });
  }

  // -- the rank's protocol, carried out ---------------------------------------------------------
  // Runs the rank's commands until one waits: for a plan, for the other members of its
  // epoch, or for a step.
  void carry_out(rank_proc& p, rank_worker::rank_command c) {
    namespace rw = rank_worker;
    for (;;) {
      if (!p.alive || p.left) return;
      p.wants_step = false;
      p.wait.reset();
      std::optional<msg::join_world> plan;
      if (const auto* w = std::get_if<rw::await_plan>(&c)) {
        if (!(plan = take_newest(p, w->at_least_epoch))) return wait_until(p, c, w->until);
      } else if (const auto* a = std::get_if<rw::await_announced_plan>(&c)) {
        if (!(plan = take_exactly(p, a->epoch))) return wait_until(p, c, a->until);
      } else if (const auto* j = std::get_if<rw::join_as>(&c)) {
        return join(p, *j);
      } else if (std::holds_alternative<rw::run_step>(c)) {
        p.wants_step = true;
        return try_step(p.joined);
      } else if (const auto* s = std::get_if<rw::after_step>(&c)) {
        if (s->send_record) send_record(p);
        c = p.protocol.on_after_step_done();
        continue;
      } else if (const auto* b = std::get_if<rw::barrier_save>(&c)) {
        if (b->send_record) send_record(p);
        // A plan that asks for a checkpoint first: the old epoch's members save at this barrier.
        if (b->verified_first && p.step != no_state) checkpoint_ = std::max(checkpoint_, p.step);
        c = p.protocol.on_barrier_saved();
        continue;
      } else if (std::holds_alternative<rw::final_save>(c)) {
        c = p.protocol.on_final_saved();
        continue;
      } else if (const auto* st = std::get_if<rw::report_stall>(&c)) {
        const auto stall = st->stall;
        send(p.name, "control", [this, stall] { apply(core_.on_rank_stalled(stall, now())); });
        c = rw::rank_command{st->then};
        continue;
      } else if (const auto* l = std::get_if<rw::leave_job>(&c)) {
        return leave(p, l->reason, l->epoch);
      } else if (const auto* f = std::get_if<rw::fail_job>(&c)) {
        return fail(p, *f);
      }
      auto next = p.protocol.on_plan(*plan, now());
      if (!next) return violation(p.name + " took plan " + std::to_string(plan->epoch) + ", which its protocol refused");
      c = std::move(*next);
    }
  }

  // The newest plan of epoch >= `at_least` (older ones are dropped), as plan_inbox::take.
  static std::optional<msg::join_world> take_newest(rank_proc& p, uint64_t at_least) {
    if (p.inbox.empty() || p.inbox.rbegin()->first < at_least) return std::nullopt;
    auto plan = std::move(p.inbox.rbegin()->second);
    p.taken = plan.epoch;
    p.inbox.clear();
    ++p.waits;
    return plan;
  }

  // Exactly epoch `epoch`, as plan_inbox::take_exactly.
  static std::optional<msg::join_world> take_exactly(rank_proc& p, uint64_t epoch) {
    const auto it = p.inbox.find(epoch);
    if (it == p.inbox.end()) return std::nullopt;
    auto plan = std::move(it->second);
    p.taken = epoch;
    p.inbox.erase(p.inbox.begin(), p.inbox.upper_bound(epoch));
    ++p.waits;
    return plan;
  }

  // The rank waits for a plan; at `until` its protocol hears of the deadline. A deadline past
  // the horizon never comes: a job that waits that long is reported as a hang.
  void wait_until(rank_proc& p, const rank_worker::rank_command& c, time_point until) {
    p.wait = c;
    const int64_t at_ms = std::chrono::duration_cast<ms>(until - time_point{}).count();
    const uint64_t seq = ++p.waits;
    if (at_ms > o_.horizon_ms) return;
    at(std::max(at_ms, now_ms_), [this, name = p.name, seq] {
      auto& q = procs_.at(name);
      if (!q.alive || q.left || q.waits != seq) return;
      note(name + " gives up waiting for a plan");
      carry_out(q, q.protocol.on_deadline(now()));
    });
  }

  // The last step's record, sent by rank 0 of the epoch it ran in.
  void send_record(const rank_proc& p) {
    const uint64_t e = p.joined, step = p.step;
    const auto w = static_cast<uint32_t>(p.members.size());
    ++records_in_flight_;
    send(p.name, "control", [this, e, step, w] {
      --records_in_flight_;
      on_record(e, step, w);
    });
  }

  void leave(rank_proc& p, const std::string& reason, uint64_t epoch, bool failed = false) {
    note(p.name + (failed ? " leaves failed: " : " leaves: ") + reason);
    left_at_[p.name] = epoch;
    if (reason == "finished") finished_ranks_.insert(p.name);
    p.left = true;
    const msg::rank_left l{p.name, epoch, p.step, reason, 0, failed};
    send(p.name, "control", [this, l] {
      journal_released(lineage_.on_rank_left(l));  // as the shell does
      apply(core_.on_rank_left(l, now()));
    });
    const auto name = p.name;
    after(jitter(1, 20), [this, name] {  // the process exits: a rank whose epoch counts on it stalls
      procs_.at(name).alive = false;
      after(jitter(5, 150), [this, name] { stall_peers_of(name); });
    });
  }

  // The rank cannot go on: it says why (acknowledged) and exits with status 1, which its
  // agent reports; a rank that gave up on checkpoints leaves as failed instead.
  void fail(rank_proc& p, const rank_worker::fail_job& f) {
    ++r_.rank_failures;
    if (f.as_left) return leave(p, f.why, f.epoch, true);
    note(p.name + " fails: " + f.why);
    p.left = true;
    p.failed = true;
    const msg::rank_failed m{p.name, f.epoch, p.step == no_state ? 0 : p.step, f.why};
    send(p.name, "control", [this, m] {
      apply(core_.on_rank_failed(m, now()));
      after(jitter(1, 20), [this, name = m.name] { kill(name, "exited with status 1"); });
    });
  }

  void deliver_plan(const std::string& to, const msg::join_world& jw) {
    auto it = procs_.find(to);
    if (it == procs_.end()) return;
    auto& p = it->second;
    if (!p.alive || p.left || jw.epoch <= p.taken) return;  // lost, or stale
    p.inbox[jw.epoch] = jw;
    if (jw.source == msg::state_source::checkpoint) {
      // A rollback supersedes the running epoch at once: its collectives fail.
      p.superseded = std::max(p.superseded, jw.epoch);
      if (in_collective(p) && p.joined < jw.epoch) return collective_fails(p, "superseded by epoch " + std::to_string(jw.epoch));
    }
    if (p.wait) carry_out(p, *p.wait);  // a waiting rank looks at its inbox again
  }

  // join_as: the rank connects to the epoch's members and takes its state; the ring forms
  // once every member has joined.
  void join(rank_proc& p, const rank_worker::join_as& j) {
    const auto& jw = j.plan;
    note(p.name + " applies epoch " + std::to_string(jw.epoch));
    const bool had_state = p.joined != 0 && p.step != no_state;
    p.joined = jw.epoch;
    p.members = jw.members;
    if (j.source == rank_worker::state_from::checkpoint) {
      p.step = checkpoint_;
      auto [it, fresh] = loaded_at_.emplace(jw.epoch, checkpoint_);
      if (!fresh && it->second != checkpoint_) violation("the members of epoch " + std::to_string(jw.epoch) + " loaded different checkpoints");
    } else if (!had_state) {
      p.step = no_state;  // a joiner: the state comes from members[0] when the epoch forms
    }
    // A rollback newer than this epoch was received already: the epoch's collectives fail.
    if (p.superseded > jw.epoch) return collective_fails(p, "superseded by epoch " + std::to_string(p.superseded));
    // A member whose process is already gone never comes up: the ring of this epoch fails.
    for (const auto& m : jw.members)
      if (const auto it = procs_.find(m); it != procs_.end() && !it->second.alive) {
        after(jitter(5, 150), [this, gone = m] { stall_peers_of(gone); });
        break;
      }
    try_form(jw.epoch);
  }

  // The ring of epoch `e` forms once every member joined it; the state of a carry-on epoch is
  // members[0]'s (by broadcast to the others).
  void try_form(uint64_t e) {
    const auto group = members_of(e, rank_worker::rank_phase::joining);
    if (group.empty()) return;
    uint64_t step = group.front()->step;
    if (step == no_state) {
      for (auto* g : group) step = std::min(step, g->step);
      if (step == no_state) return violation("epoch " + std::to_string(e) + " has no member with a state");
    }
    for (auto* g : group) g->step = step;
    for (auto* g : group) carry_out(*g, g->protocol.on_joined(step));
  }

  // Every member of epoch `e`, when each is alive in `phase` of that epoch; else none.
  std::vector<rank_proc*> members_of(uint64_t e, rank_worker::rank_phase phase) {
    std::vector<std::string> names;
    for (auto& [n, p] : procs_)
      if (p.joined == e && p.alive && !p.left && p.protocol.phase() == phase) names = p.members;
    std::vector<rank_proc*> group;
    for (const auto& n : names) {
      auto it = procs_.find(n);
      if (it == procs_.end() || it->second.joined != e || !it->second.alive || it->second.left ||
          it->second.protocol.phase() != phase)
        return {};
      group.push_back(&it->second);
    }
    return group;
  }

  // Starts the epoch's next step once every member asked for it (run_step).
  void try_step(uint64_t e) {
    if (stepping_.count(e)) return;
    const auto group = members_of(e, rank_worker::rank_phase::training);
    if (group.empty()) return;
    for (const auto* g : group)
      if (!g->wants_step) return;
    std::vector<std::string> names;
    for (auto* g : group) g->wants_step = false, names.push_back(g->name);
    stepping_.insert(e);
    after(o_.step_ms + jitter(0, o_.step_ms / 4), [this, e, names] { step_done(e, names); });
  }

  void step_done(uint64_t e, const std::vector<std::string>& names) {
    stepping_.erase(e);
    std::vector<rank_proc*> group;
    for (const auto& n : names) {
      auto& p = procs_.at(n);
      if (p.joined != e || !p.alive || p.left || p.protocol.phase() != rank_worker::rank_phase::training) return;  // the collective never completed
      group.push_back(&p);
    }
    for (auto* g : group) {
      if (left_at_.count(g->name)) violation(g->name + " trains in epoch " + std::to_string(e) + " after it left");
      ++g->step;
    }
    const uint64_t step = group.front()->step;
    if (o_.checkpoint_give_up_step != 0 && step == o_.checkpoint_give_up_step) {
      // The save of this step failed once too often on every rank: each gives up and leaves failed.
      for (auto* g : group)
        carry_out(*g, g->protocol.on_checkpoint_give_up("3 checkpoint saves failed in a row (the last at step " +
                                                        std::to_string(step) + ")"));
      return;
    }
    if (step % o_.checkpoint_interval == 0) checkpoint_ = std::max(checkpoint_, step);
    // Rank 0 announces the newest plan it holds in the step's statistics; every member learns it.
    const auto& r0 = *group.front();
    const uint64_t announce = r0.protocol.epoch_to_announce(r0.inbox.empty() ? 0 : r0.inbox.rbegin()->first);
    for (auto* g : group) {
      const bool hears = !o_.sabotage_announce_to_rank0_only || g == group.front();
      carry_out(*g, g->protocol.on_step_done(step, hears ? announce : 0, now()));
    }
  }

  void check_core() {
    std::map<std::string, int64_t> used;
    for (const auto& [n, m] : core_.members())
      if (m.state != member_state::left && m.state != member_state::dead) ++used[m.node];
    for (const auto& [node, n] : used)
      if (n > o_.slots) violation(node + " holds " + std::to_string(n) + " ranks in " + std::to_string(o_.slots) + " slots");
    if (r_.rollbacks > static_cast<uint64_t>(o_.job.max_recoveries))
      violation(std::to_string(r_.rollbacks) + " recoveries, more than max_recoveries");
    // A silent agent is found within the limit, a tick and the last heartbeat's delay; one
    // declared down stays down (nothing here joins again).
    const int64_t found_by_ms = o_.job.agent_silence_limit.count() / 1'000'000 + tick_ms + 30;
    for (const auto& [node, a] : core_.agents()) {
      if (!a.alive) continue;
      if (declared_down_.count(node)) violation("agent " + node + " is up again in the core after it was declared down");
      if (const auto it = silent_since_.find(node); it != silent_since_.end() && now_ms_ - it->second > found_by_ms)
        violation("agent " + node + " silent for " + std::to_string(now_ms_ - it->second) + " ms, still up in the core");
    }
  }

  options o_;
  rng_stream rng_;
  elastic_core core_;
  result r_;
  int64_t now_ms_ = 0;
  uint64_t seq_ = 0;
  std::map<std::pair<int64_t, uint64_t>, std::function<void()>> queue_;
  std::map<std::pair<std::string, std::string>, int64_t> channel_;
  std::map<std::string, bool> agents_alive_;
  std::map<std::string, rank_proc> procs_;
  std::set<uint64_t> stepping_;
  uint64_t checkpoint_ = 0;  // the newest committed checkpoint's step
  uint64_t last_plan_epoch_ = 0;
  record_lineage lineage_;  // the shell's rule for step records around a rollback
  std::map<uint64_t, uint64_t> loaded_at_;  // epoch -> the checkpoint step its members loaded
  uint64_t loaded_for_ = 0;
  std::map<std::string, uint64_t> left_at_;  // rank -> the epoch it left at
  std::set<std::string> finished_ranks_;
  bool rank0_lost_at_end_ = false;  // a node agent died or hung after one of its ranks finished
  uint64_t records_in_flight_ = 0;  // step records sent and not yet delivered
  std::map<std::string, int64_t> silent_since_;  // hung agents -> when they went silent
  std::set<std::string> declared_down_;           // agents the core declared down
  std::vector<uint64_t> history_;  // the journaled steps of the attempt the state descends from
};

}  // namespace

result run(const options& o) { return world(o).run(); }

options seeded(uint64_t seed) {
  options o;
  o.seed = seed;
  auto r = rng_stream::derive(seed, "elastic-sim-options");
  o.job.total_steps = 20 + r.below(40);
  o.job.global_batch = 12;  // divides by 1, 2, 3 and 4 replicas
  o.job.micro_batch = 1;
  o.job.max_replicas = 4;
  o.job.min_replicas = 1 + static_cast<int64_t>(r.below(2));
  o.job.replicas = 2 + static_cast<int64_t>(r.below(3));
  o.job.grace_period = std::chrono::seconds(5);
  o.job.ready_timeout = std::chrono::seconds(10);
  o.job.max_recoveries = 4;
  o.job.agent_silence_limit = std::chrono::seconds(1);  // 5 heartbeats
  o.nodes = 2 + static_cast<int>(r.below(2));
  o.slots = 2 + static_cast<int>(r.below(2));
  if (r.below(5) == 0) {
    o.first_plan_wait = std::chrono::milliseconds(200 + static_cast<int64_t>(r.below(1801)));
    o.stalled_plan_wait = std::chrono::milliseconds(200 + static_cast<int64_t>(r.below(1801)));
    o.announced_plan_wait = std::chrono::milliseconds(10 + static_cast<int64_t>(r.below(191)));
  }
  return o;
}

}  // namespace msomni::orchestrator::sim
