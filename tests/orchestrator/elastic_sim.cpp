// The elastic job simulation (see elastic_sim.hpp).
#include "elastic_sim.hpp"

#include "record_lineage.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace msomni::orchestrator::sim {

namespace {

using ms = std::chrono::milliseconds;
constexpr int64_t tick_ms = 200;  // the shell's tick

struct rank_proc {
  std::string name, node;
  bool alive = true;
  bool ready = false;
  bool left = false;     // sent rank_left; the process exits
  uint64_t epoch = 0;    // the plan it applied (0: none yet)
  std::vector<std::string> members;
  uint64_t step = 0;
  bool stalled = false;  // its collective failed; waits for a newer plan
  std::optional<uint64_t> awaiting;  // announced at a barrier, not yet received
  std::map<uint64_t, msg::join_world> inbox;  // carry-on plans received while training
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
    if (p.left) return;
    // Every rank whose epoch counts on it: its collective fails once the peer is seen down.
    after(jitter(5, 150), [this, name] { stall_peers_of(name); });
  }

  void stall_peers_of(const std::string& dead) {
    for (auto& [n, q] : procs_)
      if (q.alive && !q.left && q.epoch != 0 && !q.stalled && !q.awaiting &&
          std::find(q.members.begin(), q.members.end(), dead) != q.members.end()) {
        const uint64_t e = q.epoch;
        q.stalled = true;
        note(n + " stalls in epoch " + std::to_string(e));
        const msg::rank_stalled s{n, e, q.step == std::numeric_limits<uint64_t>::max() ? 0 : q.step, "a peer is down"};
        send(n, "control", [this, s] { apply(core_.on_rank_stalled(s, now())); });
      }
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
      note("plan " + std::to_string(p.epoch) + (p.source ? " checkpoint" : " carry_on") + (p.checkpoint_first ? " ckpt_first" : "") + ":" + m);
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
    if (p.source == static_cast<uint8_t>(msg::state_source::checkpoint)) lineage_.on_rollback_plan(p.epoch);
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
    rank_proc p;
    p.name = name;
    p.node = node;
    procs_[name] = p;
    after(jitter(20, 300), [this, name] {
      auto& q = procs_.at(name);
      if (!q.alive) return;
      if (rng_.uniform() < o_.start_failure_chance) return kill(name, "exited while starting");
      q.ready = true;
      const msg::rank_ready rr{name, q.node, "ucx://" + name, 1000, checkpoint_ > 0, checkpoint_};
      send(name, "control", [this, rr] { apply(core_.on_rank_ready(rr, now())); });
    });
  }

  void leave(rank_proc& p, const std::string& reason) {
    note(p.name + " leaves: " + reason);
    left_at_[p.name] = p.epoch;
    if (reason == "finished") finished_ranks_.insert(p.name);
    p.left = true;
    const msg::rank_left l{p.name, p.epoch, p.step, reason, 0};
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

  void deliver_plan(const std::string& to, const msg::join_world& jw) {
    auto it = procs_.find(to);
    if (it == procs_.end()) return;
    auto& p = it->second;
    if (!p.alive || p.left || jw.epoch <= p.epoch) return;
    const bool rollback = jw.source == static_cast<uint8_t>(msg::state_source::checkpoint);
    if (rollback || p.epoch == 0 || p.stalled) {
      // A rollback supersedes the running epoch at once; a rank without a running epoch
      // (first plan, joiner, stalled) takes any newer plan when it comes.
      if (p.epoch != 0 && !p.stalled) {  // its collective of the old epoch fails
        const msg::rank_stalled s{to, p.epoch, p.step, "superseded by epoch " + std::to_string(jw.epoch)};
        send(to, "control", [this, s] { apply(core_.on_rank_stalled(s, now())); });
      }
      return join(p, jw, rollback);
    }
    p.inbox[jw.epoch] = jw;
    if (p.awaiting == jw.epoch) {
      p.awaiting.reset();
      join(p, jw, false, true);
    }
  }

  // `at_barrier`: the plan rank 0 announced, taken after the step (where a checkpoint_first
  // plan saves first); otherwise a rollback, a first plan, or a rank that had stalled.
  void join(rank_proc& p, const msg::join_world& jw, bool from_checkpoint, bool at_barrier = false) {
    note(p.name + " applies epoch " + std::to_string(jw.epoch));
    p.inbox.erase(p.inbox.begin(), p.inbox.upper_bound(jw.epoch));
    p.awaiting.reset();
    p.stalled = false;
    const bool member = std::find(jw.members.begin(), jw.members.end(), p.name) != jw.members.end();
    constexpr uint64_t no_state = std::numeric_limits<uint64_t>::max();
    // A plan that asks for a checkpoint first: the old epoch's members save at this barrier.
    if (at_barrier && jw.checkpoint_first && p.step != no_state) checkpoint_ = std::max(checkpoint_, p.step);
    if (!member) return leave(p, jw.members.empty() ? "stopped" : "decommissioned");
    const bool had_state = p.epoch != 0 && p.step != no_state;
    p.epoch = jw.epoch;
    p.members = jw.members;
    // A member whose process is already gone never comes up: the ring of this epoch fails.
    for (const auto& m : jw.members)
      if (const auto it = procs_.find(m); it != procs_.end() && !it->second.alive) {
        const auto name = p.name, gone = m;
        after(jitter(5, 150), [this, name, gone] {
          auto& q = procs_.at(name);
          if (q.alive && !q.left && !q.stalled && std::find(q.members.begin(), q.members.end(), gone) != q.members.end())
            stall_peers_of(gone);
        });
        break;
      }
    if (from_checkpoint) {
      p.step = checkpoint_;
      auto [it, fresh] = loaded_at_.emplace(jw.epoch, checkpoint_);
      if (!fresh && it->second != checkpoint_) violation("the members of epoch " + std::to_string(jw.epoch) + " loaded different checkpoints");
    } else if (!had_state) {
      p.step = no_state;  // a joiner: the state comes from members[0] when the epoch forms
    }
    try_step(jw.epoch);
  }

  // Starts the epoch's next step once every member applied it.
  void try_step(uint64_t e) {
    std::vector<rank_proc*> group;
    std::vector<std::string> names;
    for (auto& [n, p] : procs_)
      if (p.epoch == e && p.alive && !p.left && !p.stalled) names = p.members;
    if (names.empty() || stepping_.count(e)) return;
    for (const auto& n : names) {
      auto it = procs_.find(n);
      if (it == procs_.end() || it->second.epoch != e || !it->second.alive || it->second.left || it->second.stalled) return;
      group.push_back(&it->second);
    }
    // The state of a carry-on epoch is members[0]'s (by broadcast to the others).
    uint64_t step = group.front()->step;
    if (step == std::numeric_limits<uint64_t>::max()) {
      for (auto* g : group) step = std::min(step, g->step);
      if (step == std::numeric_limits<uint64_t>::max()) return violation("epoch " + std::to_string(e) + " has no member with a state");
    }
    for (auto* g : group) g->step = step;
    if (step >= o_.job.total_steps) {
      for (auto* g : group) leave(*g, "finished");
      return;
    }
    stepping_.insert(e);
    after(o_.step_ms + jitter(0, o_.step_ms / 4), [this, e, names] { step_done(e, names); });
  }

  void step_done(uint64_t e, const std::vector<std::string>& names) {
    stepping_.erase(e);
    std::vector<rank_proc*> group;
    for (const auto& n : names) {
      auto& p = procs_.at(n);
      if (p.epoch != e || !p.alive || p.left || p.stalled) return;  // the collective never completed
      group.push_back(&p);
    }
    for (auto* g : group) {
      if (left_at_.count(g->name)) violation(g->name + " trains in epoch " + std::to_string(e) + " after it left");
      ++g->step;
    }
    const uint64_t step = group.front()->step;
    if (step % o_.checkpoint_interval == 0) checkpoint_ = std::max(checkpoint_, step);
    // Rank 0 announces the newest plan it holds; every member switches after this step.
    auto& r0 = *group.front();
    const uint64_t announce = r0.inbox.empty() ? 0 : r0.inbox.rbegin()->first;
    const auto w = static_cast<uint32_t>(group.size());
    ++records_in_flight_;
    send(r0.name, "control", [this, e, step, w] {
      --records_in_flight_;
      on_record(e, step, w);
    });
    if (announce == 0) {
      if (step >= o_.job.total_steps) {
        for (auto* g : group) leave(*g, "finished");
        return;
      }
      return try_step(e);
    }
    for (auto* g : group) {
      auto it = g->inbox.find(announce);
      if (it != g->inbox.end()) {
        const auto jw = it->second;
        join(*g, jw, false, true);
      } else {
        g->awaiting = announce;  // on its way
      }
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
  return o;
}

}  // namespace msomni::orchestrator::sim
