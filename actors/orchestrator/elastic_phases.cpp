// elastic_core, the phases of a healthy job: the first plan once the first ranks are ready,
// new ranks joining at a barrier, step records that complete a change, and the end (every
// member finished or stopped).
#include "elastic_core.hpp"

#include "number_text.hpp"

#include <algorithm>

namespace msomni::orchestrator {

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
                                                                  : " (no checkpoint yet)"),
                              r.name, r.node, {{"pid", r.pid}}});
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
  const auto pause = seconds_text(now - change_started_);
  switch (phase_) {
    case phase::shrinking:
      // A completed resize carries the job's replicas from now on: a control store keeps
      // them, and a leader taking over starts there (a change not completed is dropped).
      out.push_back(journal_event{"scale_down_done",
                                  std::to_string(world) + " replicas from step " + std::to_string(step) + " (" + pause +
                                      " s since the request)",
                                  {}, {}, {{"replicas", target_}}});
      phase_ = phase::running;
      break;
    case phase::growing:
      if (!awaiting_join_) break;  // still waiting for the new ranks to be ready
      awaiting_join_ = false;
      out.push_back(journal_event{"scale_up_done",
                                  std::to_string(world) + " replicas from step " + std::to_string(step) + " (" + pause +
                                      " s since the request)",
                                  {}, {}, {{"replicas", target_}}});
      phase_ = joining_.empty() ? phase::running : phase::growing;
      {
        auto more = maybe_join_new();
        out.insert(out.end(), more.begin(), more.end());
      }
      break;
    case phase::recovering:
      incident_losses_ = 0;
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
      m.departed_step = last_step_;
      out.push_back(stop_on_agent{m.node, n, "the job finished in epoch " + std::to_string(*finished_epoch_) +
                                                 " before this rank's epoch " + std::to_string(m.member_since) + " trained"});
    }
  if (phase_ == phase::stopping) {
    phase_ = phase::done;
    finished_ = true;
    for (const auto& n : joining_) out.push_back(stop_on_agent{members_.at(n).node, n, "the job stopped"});
    out.push_back(finish_job{true, "stopped at step " + std::to_string(last_step_) + " with a final checkpoint", true});
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
  m.departed_step = r.final_step;
  if (r.failed) return fail(r.name + " failed: " + r.reason + " (after step " + std::to_string(r.final_step) + ")");
  out.push_back(journal_event{"rank_left", r.name + " after step " + std::to_string(r.final_step) + " (" + r.reason + ")",
                              r.name, m.node});
  if (r.reason == "finished" && r.final_step >= s_.total_steps && !finished_epoch_) finished_epoch_ = r.epoch;
  if (was == member_state::active && r.reason == "finished") {
    last_step_ = std::max(last_step_, r.final_step);
    auto more = maybe_finish();
    out.insert(out.end(), more.begin(), more.end());
  } else if (was == member_state::active && phase_ == phase::stopping) {
    last_step_ = std::max(last_step_, r.final_step);  // the step the stop's final checkpoint holds
    auto more = maybe_finish();
    out.insert(out.end(), more.begin(), more.end());
  } else if (was == member_state::active) {
    m.state = member_state::active;  // not expected: treat as a failure
    auto more = on_rank_down(r.name, "left unexpectedly (" + r.reason + ")", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace msomni::orchestrator
