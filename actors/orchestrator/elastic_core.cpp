// elastic_core (see elastic_core.hpp).
#include "elastic_core.hpp"

#include "number_text.hpp"
#include "core/json_escape.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

namespace msomni::orchestrator {

namespace {

double seconds(nanos d) { return static_cast<double>(d.count()) / 1e9; }

std::string fixed1(double v) { return fixed(v, 1); }

}  // namespace

const char* to_string(member_state s) {
  switch (s) {
    case member_state::starting: return "starting";
    case member_state::ready: return "ready";
    case member_state::active: return "active";
    case member_state::leaving: return "leaving";
    case member_state::left: return "left";
    case member_state::dead: return "dead";
  }
  return "?";
}

const char* elastic_core::to_string(phase p) {
  switch (p) {
    case phase::starting: return "starting";
    case phase::running: return "running";
    case phase::shrinking: return "shrinking";
    case phase::growing: return "growing";
    case phase::recovering: return "recovering";
    case phase::stopping: return "stopping";
    case phase::done: return "done";
  }
  return "?";
}

elastic_core::elastic_core(elastic_settings s) : s_(s), target_(s.replicas) {}

std::optional<int64_t> elastic_core::grad_accum_for(int64_t world) const {
  if (world <= 0 || s_.micro_batch <= 0) return std::nullopt;
  const int64_t per_step = world * s_.micro_batch;
  if (s_.global_batch % per_step != 0) return std::nullopt;
  return s_.global_batch / per_step;
}

int64_t elastic_core::largest_world_at_most(int64_t n) const {
  for (int64_t w = std::min(n, s_.max_replicas); w >= std::max<int64_t>(1, s_.min_replicas); --w)
    if (grad_accum_for(w)) return w;
  return 0;
}

int64_t elastic_core::world() const { return static_cast<int64_t>(ring_.size()); }

bool elastic_core::can_grow() const {
  return phase_ == phase::running && world() < s_.max_replicas && free_slots() > 0;
}

bool elastic_core::can_shrink() const { return phase_ == phase::running && world() > s_.min_replicas; }

std::vector<std::string> elastic_core::current() const {
  std::vector<std::string> out;
  for (const auto& n : ring_)
    if (members_.at(n).state == member_state::active) out.push_back(n);
  return out;
}

// Slots of a live agent not held by a rank process (starting, ready, active or leaving).
int64_t elastic_core::free_slots_on(const agent_info& a) const {
  if (!a.alive) return 0;
  int64_t used = 0;
  for (const auto& [n, m] : members_)
    if (m.node == a.node && m.state != member_state::left && m.state != member_state::dead) ++used;
  return std::max<int64_t>(0, a.slots - used);
}

int64_t elastic_core::free_slots() const {
  int64_t free = 0;
  for (const auto& [node, a] : agents_) free += free_slots_on(a);
  return free;
}

// The agent with a free slot closest to `near_node`: the same node, then the same rack, then
// the same switch, then the one with most free slots (names break ties, for determinism).
std::optional<std::string> elastic_core::place(const std::string& near_node) const {
  const agent_info* near = agents_.count(near_node) ? &agents_.at(near_node) : nullptr;
  std::optional<std::string> best;
  std::tuple<int, int64_t> best_score{-1, 0};
  for (const auto& [node, a] : agents_) {
    const int64_t free = free_slots_on(a);
    if (free <= 0) continue;
    int closeness = 0;
    if (near) closeness = node == near->node ? 3 : a.rack == near->rack ? 2 : a.switch_name == near->switch_name ? 1 : 0;
    const std::tuple<int, int64_t> score{closeness, free};
    if (score > best_score) best_score = score, best = node;
  }
  return best;
}

std::vector<action> elastic_core::spawn(int64_t count, const std::string& near_node, time_point now) {
  std::vector<action> out;
  std::string near = near_node;
  for (int64_t i = 0; i < count; ++i) {
    const auto node = place(near);
    if (!node) break;
    member_info m;
    m.name = "rank-" + std::to_string(next_rank_id_++);
    m.node = *node;
    m.since = now;
    m.replacement = downs_ > 0;
    members_[m.name] = m;
    joining_.push_back(m.name);
    out.push_back(spawn_on_agent{*node, m.name});
    out.push_back(journal_event{"rank_spawn", m.name + " on node " + *node + " (rack " + agents_[*node].rack +
                                                  ", switch " + agents_[*node].switch_name + ")"});
    if (near.empty()) near = *node;  // keep a data-parallel group together
  }
  return out;
}

send_plan elastic_core::make_plan(std::vector<std::string> members, msg::state_source source, bool checkpoint_first,
                                  std::vector<std::string> also_to, std::string reason) {
  send_plan p;
  p.plan.epoch = ++epoch_;
  p.plan.members = members;
  for (const auto& n : members)
    if (auto& m = members_.at(n); m.member_since == 0) m.member_since = epoch_;
  for (const auto& n : members) p.plan.addresses.push_back(members_.at(n).address);
  p.plan.grad_accum = members.empty() ? 1 : grad_accum_for(static_cast<int64_t>(members.size())).value_or(1);
  p.plan.source = static_cast<uint8_t>(source);
  p.plan.checkpoint_first = checkpoint_first;
  p.plan.reason = std::move(reason);
  p.to = ring_;
  for (auto& n : also_to)
    if (std::find(p.to.begin(), p.to.end(), n) == p.to.end()) p.to.push_back(n);
  std::erase_if(p.to, [&](const std::string& n) {
    const auto st = members_.at(n).state;
    return st == member_state::dead || st == member_state::left;
  });
  return p;
}

std::vector<action> elastic_core::on_agent(const agent_info& a, time_point now) {
  std::vector<action> out;
  const bool known = agents_.count(a.node) > 0;
  agents_[a.node] = a;
  if (!known)
    out.push_back(journal_event{"agent_joined", a.node + " (rack " + a.rack + ", switch " + a.switch_name + ", " +
                                                    std::to_string(a.slots) + " slots)"});
  if (phase_ == phase::starting && next_rank_id_ == 0 && free_slots() >= target_) {
    auto more = spawn(target_, "", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::vector<action> elastic_core::on_agent_down(const std::string& node, const std::string& why, time_point now) {
  std::vector<action> out;
  if (!agents_.count(node) || !agents_[node].alive) return out;
  agents_[node].alive = false;
  out.push_back(journal_event{"agent_down", node + ": " + why});
  std::vector<std::string> lost;
  for (const auto& [n, m] : members_)
    if (m.node == node && m.state != member_state::left && m.state != member_state::dead) lost.push_back(n);
  // Every rank of the node is down at once: one recovery for all of them, planned once they
  // are all marked (rank by rank, the first plan would name the next lost rank and the node
  // would spend a recovery per rank).
  deferring_losses_ = true;
  for (const auto& n : lost) {
    auto more = on_rank_down(n, "its node agent " + node + " is down", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  deferring_losses_ = false;
  if (auto lost_first = std::exchange(deferred_start_, std::nullopt); lost_first && phase_ == phase::starting) {
    if (largest_world_at_most(static_cast<int64_t>(joining_.size())) == 0) {
      auto end = fail(cannot_start_reason(lost_first->first, lost_first->second));
      out.insert(out.end(), end.begin(), end.end());
      return out;
    }
    auto started = maybe_start();
    out.insert(out.end(), started.begin(), started.end());
  }
  if (auto loss = std::exchange(deferred_loss_, std::nullopt); loss && phase_ != phase::done) {
    auto more = recover_from_loss(loss->first, loss->second, now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::vector<action> elastic_core::on_rank_ready(const msg::rank_ready& r, time_point now) {
  std::vector<action> out;
  auto it = members_.find(r.name);
  if (it == members_.end() || it->second.state != member_state::starting) return out;
  auto& m = it->second;
  m.address = r.address;
  m.pid = r.pid;
  m.state = member_state::ready;
  m.since = now;
  out.push_back(journal_event{"rank_ready", r.name + " on " + r.node + " pid " + std::to_string(r.pid) + ", warmed up" +
                                                (r.has_checkpoint ? " with checkpoint step " + std::to_string(r.checkpoint_step)
                                                                  : " (no checkpoint yet)")});
  if (phase_ == phase::starting) {
    auto more = maybe_start();
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
  if (!rollback_pending_.empty()) {
    for (const auto& n : joining_)
      if (members_.at(n).state != member_state::ready) return out;
    auto more = rollback(rollback_pending_, now);
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
  auto more = maybe_join_new();
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// The first plan, once every first rank is ready and they make a world size the job allows
// (at least min_replicas, dividing the global batch). Ranks beyond that size are stopped.
std::vector<action> elastic_core::maybe_start() {
  std::vector<action> out;
  if (phase_ != phase::starting || joining_.empty()) return out;
  for (const auto& n : joining_)
    if (members_.at(n).state != member_state::ready) return out;
  const int64_t w = largest_world_at_most(static_cast<int64_t>(joining_.size()));
  if (w == 0) return out;  // fewer than min_replicas: replacements are on their way
  std::vector<std::string> members(joining_.begin(), joining_.begin() + w);
  for (size_t i = static_cast<size_t>(w); i < joining_.size(); ++i) {
    auto& extra = members_.at(joining_[i]);
    extra.state = member_state::left;
    out.push_back(stop_on_agent{extra.node, extra.name, "not needed: the job starts with " + std::to_string(w) + " replicas"});
  }
  auto plan = make_plan(members, msg::state_source::checkpoint, false, members,
                        s_.resume ? "start: resume from the newest verified checkpoint" : "start");
  ring_ = members;
  for (const auto& n : ring_) members_.at(n).state = member_state::active;
  joining_.clear();
  phase_ = phase::running;
  out.push_back(journal_event{"ranks_started", std::to_string(ring_.size()) + " ranks, epoch " + std::to_string(epoch_) +
                                                   ", grad_accum " + std::to_string(plan.plan.grad_accum)});
  out.push_back(std::move(plan));
  return out;
}

// Joins the ready new ranks at the next barrier: as many as keep the world size allowed
// (within max_replicas, and dividing the global batch); the others wait for a later join.
std::vector<action> elastic_core::maybe_join_new() {
  std::vector<action> out;
  if (phase_ != phase::growing || joining_.empty() || awaiting_join_) return out;
  std::vector<std::string> ready;
  for (const auto& n : joining_)
    if (members_.at(n).state == member_state::ready) ready.push_back(n);
  int64_t k = static_cast<int64_t>(ready.size());
  while (k > 0 && (world() + k > s_.max_replicas || !grad_accum_for(world() + k))) --k;
  if (k == 0) return out;
  ready.resize(static_cast<size_t>(k));
  auto members = current();
  members.insert(members.end(), ready.begin(), ready.end());
  auto plan = make_plan(members, msg::state_source::carry_on, false, ready,
                        std::to_string(k) + " new ranks join at the next barrier");
  for (const auto& n : ready) {
    members_.at(n).state = member_state::active;
    std::erase(joining_, n);
  }
  ring_ = members;
  plan_epoch_ = epoch_;
  awaiting_join_ = true;
  out.push_back(journal_event{"scale_up_join", "epoch " + std::to_string(epoch_) + ": " + std::to_string(ring_.size()) +
                                                   " replicas, grad_accum " + std::to_string(plan.plan.grad_accum) +
                                                   "; new ranks receive the state by broadcast"});
  out.push_back(std::move(plan));
  return out;
}

// After a failure, ranks that could not be placed at once (slots held by leavers) are
// started as slots free up, until the target is back.
std::vector<action> elastic_core::top_up(time_point now) {
  std::vector<action> out;
  if (phase_ != phase::running && phase_ != phase::growing) return out;
  const int64_t missing = target_ - world() - static_cast<int64_t>(joining_.size());
  const int64_t n = std::min(missing, free_slots());
  if (n <= 0 || ring_.empty()) return out;
  out = spawn(n, members_.at(ring_.front()).node, now);
  out.push_back(journal_event{"replacement", std::to_string(n) + " more replacement rank(s) starting (target " +
                                                 std::to_string(target_) + " replicas)"});
  phase_ = phase::growing;
  return out;
}

std::vector<action> elastic_core::on_step(uint64_t step, uint32_t world, time_point now) {
  std::vector<action> out;
  last_step_ = step;
  if (static_cast<int64_t>(world) != static_cast<int64_t>(ring_.size())) return out;
  const auto pause = fixed1(seconds(now - change_started_));
  switch (phase_) {
    case phase::shrinking:
      out.push_back(journal_event{"scale_down_done", std::to_string(world) + " replicas from step " + std::to_string(step) +
                                                         " (" + pause + " s since the request)"});
      phase_ = phase::running;
      break;
    case phase::growing:
      if (!awaiting_join_) break;  // still waiting for the new ranks to be ready
      awaiting_join_ = false;
      out.push_back(journal_event{"scale_up_done", std::to_string(world) + " replicas from step " + std::to_string(step) +
                                                       " (" + pause + " s since the request)"});
      phase_ = joining_.empty() ? phase::running : phase::growing;
      {
        auto more = maybe_join_new();
        out.insert(out.end(), more.begin(), more.end());
      }
      break;
    case phase::recovering:
      out.push_back(journal_event{"recovered", "training again on " + std::to_string(world) + " replicas at step " +
                                                   std::to_string(step) + " (" + pause + " s after the failure)"});
      phase_ = joining_.empty() ? phase::running : phase::growing;
      {
        auto more = maybe_join_new();
        out.insert(out.end(), more.begin(), more.end());
      }
      break;
    default: break;
  }
  return out;
}

std::vector<action> elastic_core::maybe_finish() {
  std::vector<action> out;
  if (phase_ == phase::done) return out;
  // Members of plans newer than the epoch that completed the last step (a join or rollback
  // sent while it ran) would only redo steps: the job does not wait for them.
  const auto too_late = [&](const member_info& m) { return finished_epoch_ && m.member_since > *finished_epoch_; };
  for (const auto& n : ring_)
    if (members_.at(n).state == member_state::active && !too_late(members_.at(n))) return out;
  if (finished_epoch_)
    for (const auto& n : ring_) {
      auto& m = members_.at(n);
      if (m.state != member_state::active) continue;
      m.state = member_state::left;
      out.push_back(stop_on_agent{m.node, n, "the job finished in epoch " + std::to_string(*finished_epoch_) +
                                                 " before this rank's epoch " + std::to_string(m.member_since) + " trained"});
    }
  if (phase_ == phase::stopping) {
    phase_ = phase::done;
    finished_ = true;
    for (const auto& n : joining_) out.push_back(stop_on_agent{members_.at(n).node, n, "the job stopped"});
    out.push_back(finish_job{true, "stopped at step " + std::to_string(last_step_) + " with a final checkpoint"});
  } else if (last_step_ >= s_.total_steps && !ring_.empty()) {
    phase_ = phase::done;
    finished_ = true;
    for (const auto& n : joining_) out.push_back(stop_on_agent{members_.at(n).node, n, "the job finished"});
    out.push_back(finish_job{true, "finished " + std::to_string(last_step_) + " steps"});
  }
  return out;
}

std::vector<action> elastic_core::on_rank_left(const msg::rank_left& r, time_point now) {
  std::vector<action> out;
  auto it = members_.find(r.name);
  if (it == members_.end()) return out;
  auto& m = it->second;
  const auto was = m.state;
  if (was == member_state::left || was == member_state::dead) return out;
  m.state = member_state::left;
  m.since = now;
  out.push_back(journal_event{"rank_left", r.name + " after step " + std::to_string(r.final_step) + " (" + r.reason + ")"});
  if (r.reason == "finished" && r.final_step >= s_.total_steps && !finished_epoch_) finished_epoch_ = r.epoch;
  if (was == member_state::active && r.reason == "finished") {
    last_step_ = std::max(last_step_, r.final_step);
    auto more = maybe_finish();
    out.insert(out.end(), more.begin(), more.end());
  } else if (was == member_state::active && phase_ == phase::stopping) {
    auto more = maybe_finish();
    out.insert(out.end(), more.begin(), more.end());
  } else if (was == member_state::active) {
    m.state = member_state::active;  // not expected: treat as a failure
    auto more = on_rank_down(r.name, "left unexpectedly (" + r.reason + ")", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::vector<action> elastic_core::on_rank_down(const std::string& name, const std::string& why, time_point now) {
  std::vector<action> out;
  auto it = members_.find(name);
  if (it == members_.end()) return out;
  auto& m = it->second;
  const auto was = m.state;
  if (was == member_state::left || was == member_state::dead) return out;
  m.state = member_state::dead;
  m.since = now;
  ++downs_;
  out.push_back(journal_event{"rank_down", name + " (" + std::string(orchestrator::to_string(was)) + ") on " + m.node + ": " + why});
  out.push_back(stop_on_agent{m.node, name, "declared down: " + why});
  if (phase_ == phase::done) return out;
  if (was == member_state::starting || was == member_state::ready) {
    std::erase(joining_, name);
    if (!rollback_pending_.empty()) {
      if (deferring_losses_) {
        if (!deferred_loss_) deferred_loss_ = {m.node, rollback_pending_};
        return out;
      }
      auto more = rollback(rollback_pending_, now);
      out.insert(out.end(), more.begin(), more.end());
      return out;
    }
    if (phase_ == phase::starting) {
      // A first rank did not come up: start another in its place (bounded by max_recoveries).
      if (++recoveries_ > s_.max_recoveries) {
        phase_ = phase::done;
        out.push_back(finish_job{false, "ranks keep failing to start (" + why + ")"});
        return out;
      }
      auto more = spawn(1, m.node, now);
      const bool placed = !more.empty();
      out.insert(out.end(), more.begin(), more.end());
      if (placed) return out;
      if (deferring_losses_) {  // decided once every rank of the lost node is marked
        if (!deferred_start_) deferred_start_ = {name, why};
        return out;
      }
      // No slot for a replacement: the first ranks that are left start if they make a world
      // size the job allows; otherwise the job cannot start (waiting would wait forever).
      if (largest_world_at_most(static_cast<int64_t>(joining_.size())) == 0) {
        auto end = fail(cannot_start_reason(name, why));
        out.insert(out.end(), end.begin(), end.end());
        return out;
      }
      auto started = maybe_start();
      out.insert(out.end(), started.begin(), started.end());
      return out;
    }
    auto more = maybe_join_new();
    out.insert(out.end(), more.begin(), more.end());
    if (phase_ == phase::growing && joining_.empty() && !awaiting_join_) {
      out.push_back(journal_event{"scale_up_incomplete", "a new rank died before joining: " + name});
      phase_ = phase::running;
    }
    return out;
  }
  if (was == member_state::leaving) return out;  // it was leaving anyway; a stalled survivor rolls back
  if (phase_ == phase::stopping) {
    auto more = maybe_finish();
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
  if (deferring_losses_) {
    if (!deferred_loss_) deferred_loss_ = {m.node, name + " is down (" + why + ")"};
    return out;
  }
  auto more = recover_from_loss(m.node, name + " is down (" + why + ")", now);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

std::string elastic_core::cannot_start_reason(const std::string& name, const std::string& why) const {
  return "cannot start: " + name + " was lost while starting (" + why + "), " + std::to_string(joining_.size()) +
         " first ranks are left, min_replicas is " + std::to_string(s_.min_replicas) +
         ", and no agent has a free slot for a replacement";
}

// A rollback of the survivors, then replacements placed near the lost rank's node to get
// back to the target.
std::vector<action> elastic_core::recover_from_loss(const std::string& node, const std::string& why, time_point now) {
  auto out = rollback(why, now);
  const int64_t missing = target_ - world() - static_cast<int64_t>(joining_.size());
  const int64_t replacements = std::min(missing, free_slots());
  if (phase_ == phase::recovering && replacements > 0) {
    auto more = spawn(replacements, node, now);
    out.insert(out.end(), more.begin(), more.end());
    out.push_back(journal_event{"replacement", std::to_string(replacements) + " replacement rank(s) starting near " +
                                                   node + "; they join at a barrier once ready"});
  }
  return out;
}

std::vector<action> elastic_core::on_rank_failed(const msg::rank_failed& r, time_point now) {
  std::vector<action> out;
  const auto it = members_.find(r.name);
  if (it == members_.end() || it->second.state == member_state::left || it->second.state == member_state::dead ||
      phase_ == phase::done)
    return out;
  const std::string reason = r.reason.empty() ? "no reason given" : r.reason;
  const auto earlier = failures_.repeat_of(r.name, reason, it->second.replacement);
  failures_.record(r.name, reason);
  if (!earlier) return on_rank_down(r.name, "failed: " + reason, now);
  // The same words from a rank started after the first: another replacement would fail alike.
  it->second.state = member_state::dead;
  it->second.since = now;
  ++downs_;
  out.push_back(journal_event{"rank_down", r.name + " on " + it->second.node + ": failed: " + reason});
  out.push_back(stop_on_agent{it->second.node, r.name, "failed: " + reason});
  auto end = fail(r.name + " failed: " + reason + " (again: " + *earlier + " failed the same way, so a replacement would too; " +
                  std::to_string(recoveries_) + " of " + std::to_string(s_.max_recoveries) + " recoveries spent)");
  out.insert(out.end(), end.begin(), end.end());
  return out;
}

std::vector<action> elastic_core::rollback(std::string why, time_point now) {
  std::vector<action> out;
  std::vector<std::string> survivors;
  for (const auto& n : ring_) {
    const auto st = members_.at(n).state;
    if (st == member_state::active || st == member_state::leaving) survivors.push_back(n);
  }
  // Leavers of a scale-down that were still there stay out: the change they were part of is over.
  std::vector<std::string> staying;
  for (const auto& n : survivors)
    if (members_.at(n).state == member_state::active) staying.push_back(n);
  // New ranks that are ready (warmed up with the checkpoint) roll back with the rest.
  std::vector<std::string> still_joining;
  for (const auto& n : joining_) {
    if (members_.at(n).state == member_state::ready && phase_ != phase::starting) {
      staying.push_back(n);
      survivors.push_back(n);
    } else {
      still_joining.push_back(n);
    }
  }
  const int64_t w = largest_world_at_most(static_cast<int64_t>(staying.size()));
  const bool counted = !rollback_pending_.empty();  // this recovery was counted when it started waiting
  if (w == 0 && (counted || recoveries_ < s_.max_recoveries)) {
    // Too few survivors: start replacements (placed near the survivors) and roll back once
    // they are ready, if the agents have the slots.
    int64_t need = 0;
    for (int64_t v = std::max<int64_t>(static_cast<int64_t>(staying.size()), s_.min_replicas); v <= s_.max_replicas; ++v)
      if (grad_accum_for(v)) {
        need = v;
        break;
      }
    const int64_t more = need - static_cast<int64_t>(staying.size()) - static_cast<int64_t>(still_joining.size());
    if (need > 0 && more <= free_slots()) {
      if (!counted) ++recoveries_;
      rollback_pending_ = why;
      joining_ = still_joining;
      phase_ = phase::recovering;
      change_started_ = now;
      awaiting_join_ = false;
      if (more > 0) {
        auto spawned = spawn(more, staying.empty() ? "" : members_.at(staying.front()).node, now);
        out.insert(out.end(), spawned.begin(), spawned.end());
      }
      out.push_back(journal_event{"recovery_waiting", why + "; " + std::to_string(staying.size()) +
                                                          " survivors wait for replacements to reach " + std::to_string(need) +
                                                          " replicas, then roll back to the last checkpoint"});
      return out;
    }
  }
  if ((!counted && recoveries_ >= s_.max_recoveries) || w == 0) {
    phase_ = phase::done;
    finished_ = true;
    const std::string reason =
        recoveries_ >= s_.max_recoveries
            ? "gave up after " + std::to_string(recoveries_) + " recoveries (bound " + std::to_string(s_.max_recoveries) + ")"
            : std::to_string(staying.size()) + " surviving replicas allow no world size within [min_replicas " +
                  std::to_string(s_.min_replicas) + ", max_replicas " + std::to_string(s_.max_replicas) +
                  "] that divides global_batch " + std::to_string(s_.global_batch);
    for (const auto& n : survivors) out.push_back(stop_on_agent{members_.at(n).node, n, "the job failed"});
    for (const auto& n : still_joining) out.push_back(stop_on_agent{members_.at(n).node, n, "the job failed"});
    out.push_back(finish_job{false, why + "; " + reason});
    return out;
  }
  if (!counted) ++recoveries_;
  rollback_pending_.clear();
  awaiting_join_ = false;
  joining_ = still_joining;
  for (const auto& n : staying) members_.at(n).state = member_state::active;
  std::vector<std::string> members(staying.begin(), staying.begin() + w);
  for (size_t i = static_cast<size_t>(w); i < staying.size(); ++i) members_.at(staying[i]).state = member_state::leaving;
  auto plan = make_plan(members, msg::state_source::checkpoint, false, survivors,
                        "rollback to the last checkpoint: " + why);
  ring_ = members;
  phase_ = phase::recovering;
  change_started_ = now;
  plan_epoch_ = epoch_;
  rollback_epoch_ = epoch_;
  out.push_back(journal_event{"recovery", why + "; " + std::to_string(w) + " replicas roll back to the last checkpoint (epoch " +
                                              std::to_string(epoch_) + ", recovery " + std::to_string(recoveries_) + " of at most " +
                                              std::to_string(s_.max_recoveries) + ")"});
  out.push_back(std::move(plan));
  return out;
}

std::vector<action> elastic_core::on_training_diverged(const std::string& why, time_point now) {
  if (phase_ != phase::running) return {};
  return rollback(why, now);
}

std::vector<action> elastic_core::fail(const std::string& why) {
  std::vector<action> out;
  if (phase_ == phase::done) return out;
  phase_ = phase::done;
  finished_ = true;
  for (const auto& [name, m] : members_)
    if (m.state != member_state::left && m.state != member_state::dead)
      out.push_back(stop_on_agent{m.node, name, "the job failed"});
  out.push_back(finish_job{false, why});
  return out;
}

std::vector<action> elastic_core::on_rank_stalled(const msg::rank_stalled& r, time_point now) {
  std::vector<action> out;
  auto it = members_.find(r.name);
  if (it == members_.end() || it->second.state != member_state::active) return out;
  // A stall of an epoch before the last rollback is that rollback's own doing; a stall while
  // replacements are awaited is expected. Anything else (including a stall in the epoch a
  // scale-down or scale-up is leaving) means the membership is broken: roll back.
  if (r.epoch < rollback_epoch_ || !rollback_pending_.empty() || phase_ == phase::done) return out;
  return rollback(r.name + " stalled at step " + std::to_string(r.step) + " (" + r.reason + ")", now);
}

std::vector<action> elastic_core::on_tick(time_point now) {
  std::vector<action> out;
  if (phase_ == phase::shrinking && now >= deadline_) {
    std::vector<std::string> late;
    for (const auto& [n, m] : members_)
      if (m.state == member_state::leaving) late.push_back(n);
    for (const auto& n : late) {
      members_.at(n).state = member_state::dead;
      out.push_back(journal_event{"grace_period_expired", n + " did not leave within " + fixed1(seconds(s_.grace_period)) +
                                                              " s; stopping it"});
      out.push_back(stop_on_agent{members_.at(n).node, n, "grace period passed"});
    }
    if (!late.empty()) {
      // Members still waiting at the barrier with a stopped leaver stall and roll back.
      auto more = rollback("leavers overran the grace period", now);
      out.insert(out.end(), more.begin(), more.end());
    }
  }
  {
    auto more = top_up(now);
    out.insert(out.end(), more.begin(), more.end());
  }
  std::vector<std::string> slow;
  for (const auto& [n, m] : members_)
    if (m.state == member_state::starting && now - m.since > s_.ready_timeout) slow.push_back(n);
  for (const auto& n : slow) {
    auto more = on_rank_down(n, "not ready within " + fixed1(seconds(s_.ready_timeout)) + " s", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

control_outcome elastic_core::scale_to(int64_t replicas, nanos grace_period, time_point now) {
  control_outcome o;
  const int64_t w = world();
  if (phase_ != phase::running) {
    o.text = std::string("refused: the job is ") + to_string(phase_) + "; one elastic change at a time";
    return o;
  }
  // Members that already left (the last step is done and they report one by one) leave no
  // world to resize; a plan built from them would name ranks that are gone.
  if (current().size() != ring_.size()) {
    o.text = "refused: the job is finishing (" + std::to_string(ring_.size() - current().size()) + " of " +
             std::to_string(ring_.size()) + " replicas have left after step " + std::to_string(last_step_) + ")";
    return o;
  }
  if (replicas < s_.min_replicas || replicas > s_.max_replicas) {
    o.text = "refused: " + std::to_string(replicas) + " replicas is outside [elasticity.min_replicas " +
             std::to_string(s_.min_replicas) + ", elasticity.max_replicas " + std::to_string(s_.max_replicas) + "]";
    return o;
  }
  const auto accum = grad_accum_for(replicas);
  if (!accum) {
    o.text = "refused: global_batch " + std::to_string(s_.global_batch) + " cannot be split over " +
             std::to_string(replicas) + " replicas x micro_batch " + std::to_string(s_.micro_batch);
    return o;
  }
  if (replicas == w) {
    o.ok = true;
    o.text = "already at " + std::to_string(w) + " replicas";
    return o;
  }
  change_started_ = now;
  target_ = replicas;
  if (replicas < w) {
    auto members = current();
    members.resize(static_cast<size_t>(replicas));
    for (const auto& n : current())
      if (std::find(members.begin(), members.end(), n) == members.end()) members_.at(n).state = member_state::leaving;
    auto everyone = ring_;
    auto plan = make_plan(members, msg::state_source::carry_on, true, everyone,
                          "scale-down to " + std::to_string(replicas));
    ring_ = members;
    deadline_ = now + (grace_period.count() > 0 ? grace_period : s_.grace_period);
    plan_epoch_ = epoch_;
    phase_ = phase::shrinking;
    o.actions.push_back(journal_event{"scale_down", std::to_string(w) + " -> " + std::to_string(replicas) +
                                                        " replicas at the next barrier (epoch " + std::to_string(epoch_) +
                                                        ", grad_accum " + std::to_string(*accum) +
                                                        "); checkpoint first; grace period " +
                                                        fixed1(seconds(deadline_ - now)) + " s"});
    o.actions.push_back(std::move(plan));
    o.ok = true;
    o.text = "scaling down to " + std::to_string(replicas) + " replicas at the next barrier";
    return o;
  }
  const int64_t need = replicas - w;
  if (free_slots() < need) {
    o.text = "refused: " + std::to_string(need) + " more ranks need slots, the agents have " +
             std::to_string(free_slots()) + " free";
    return o;
  }
  o.actions = spawn(need, ring_.empty() ? "" : members_.at(ring_.front()).node, now);
  o.actions.push_back(journal_event{"scale_up", std::to_string(w) + " -> " + std::to_string(replicas) +
                                                    " replicas: new ranks load and verify the latest checkpoint, warm up, "
                                                    "and join at a barrier (grad_accum " + std::to_string(*accum) + ")"});
  phase_ = phase::growing;
  o.ok = true;
  o.text = "scaling up to " + std::to_string(replicas) + " replicas: " + std::to_string(need) + " ranks starting";
  return o;
}

control_outcome elastic_core::scale_down(int64_t replicas, nanos grace_period, time_point now) {
  if (replicas >= world())
    return {false, "refused: scale-down to " + std::to_string(replicas) + " replicas, the job has " + std::to_string(world()), {}};
  return scale_to(replicas, grace_period, now);
}

control_outcome elastic_core::scale_up(int64_t replicas, time_point now) {
  if (replicas <= world())
    return {false, "refused: scale-up to " + std::to_string(replicas) + " replicas, the job has " + std::to_string(world()), {}};
  return scale_to(replicas, nanos{0}, now);
}

control_outcome elastic_core::stop(time_point now) {
  control_outcome o;
  if (phase_ != phase::running) {
    o.text = std::string("refused: the job is ") + to_string(phase_) + "; stop waits for a steady state";
    return o;
  }
  change_started_ = now;
  auto everyone = ring_;
  auto plan = make_plan({}, msg::state_source::carry_on, true, everyone, "stop requested");
  phase_ = phase::stopping;
  o.actions.push_back(journal_event{"stop", "every rank saves a final checkpoint at the next barrier and leaves"});
  o.actions.push_back(std::move(plan));
  o.ok = true;
  o.text = "stopping at the next barrier with a final checkpoint";
  return o;
}

std::string elastic_core::status_json() const {
  std::ostringstream j;
  j << "{\"phase\":\"" << to_string(phase_) << "\",\"epoch\":" << epoch_ << ",\"step\":" << last_step_
    << ",\"total_steps\":" << s_.total_steps << ",\"world\":" << ring_.size() << ",\"target\":" << target_
    << ",\"grad_accum\":" << grad_accum_for(world()).value_or(0) << ",\"ranks\":[";
  bool first = true;
  for (const auto& [n, m] : members_) {
    j << (first ? "" : ",") << "{\"name\":\"" << json_escape(n) << "\",\"node\":\"" << json_escape(m.node)
      << "\",\"pid\":" << m.pid << ",\"state\":\"" << orchestrator::to_string(m.state) << "\",\"step\":"
      << (m.state == member_state::active ? last_step_ : 0) << "}";
    first = false;
  }
  j << "],\"agents\":[";
  first = true;
  for (const auto& [n, a] : agents_) {
    j << (first ? "" : ",") << "{\"node\":\"" << json_escape(n) << "\",\"rack\":\"" << json_escape(a.rack)
      << "\",\"switch\":\"" << json_escape(a.switch_name) << "\",\"slots\":" << a.slots
      << ",\"alive\":" << (a.alive ? "true" : "false") << "}";
    first = false;
  }
  j << "]}";
  return j.str();
}

std::string elastic_core::status_text() const {
  std::ostringstream t;
  t << "job " << to_string(phase_) << ": step " << last_step_ << "/" << s_.total_steps << ", " << ring_.size()
    << " replicas (target " << target_ << "), epoch " << epoch_ << "\n";
  for (const auto& [n, m] : members_)
    t << "  " << n << "  node " << m.node << "  pid " << m.pid << "  " << orchestrator::to_string(m.state) << "\n";
  return t.str();
}

}  // namespace msomni::orchestrator
