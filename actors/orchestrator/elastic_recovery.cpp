// elastic_core, recovery: a rank or node lost, stalled or failed; the rollback of the
// survivors to the last checkpoint at the largest allowed world; replacements near the loss;
// and the ends of a job that cannot go on.
#include "elastic_core.hpp"

#include <algorithm>
#include <utility>

namespace msomni::orchestrator {

std::vector<action> elastic_core::on_rank_down(const std::string& name, const std::string& why, time_point now) {
  std::vector<action> out;
  auto it = members_.find(name);
  if (it == members_.end()) return out;
  auto& m = it->second;
  const auto was = m.state;
  if (was == member_state::left || was == member_state::dead) return out;
  m.state = member_state::dead;
  m.since = now;
  m.departed_step = last_step_;
  ++downs_;
  out.push_back(journal_event{"rank_down", name + " (" + std::string(orchestrator::to_string(was)) + ") on " + m.node + ": " + why, name,
                              m.node});
  out.push_back(stop_on_agent{m.node, name, "declared down: " + why});
  if (phase_ == phase::done) return out;
  if (was == member_state::starting || was == member_state::ready) {
    std::erase(joining_, name);
    if (!rollback_pending_.empty()) {
      if (++replacements_lost_ > s_.max_recoveries) {
        auto end = fail(rollback_pending_ + "; gave up: " + std::to_string(replacements_lost_) +
                        " replacement ranks were lost before they could join (bound max_recoveries " +
                        std::to_string(s_.max_recoveries) + "), the last: " + name + " (" + why + ")");
        out.insert(out.end(), end.begin(), end.end());
        return out;
      }
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
      out.push_back(journal_event{"scale_up_incomplete", "a new rank died before joining: " + name, name});
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
// back to the target. A member lost while a rollback plan is still out (no step of its epoch
// yet) is part of the incident that rollback answers: a rank that saw its send to the dead
// peer fail reports its stall before the peer's own loss arrives. The plan is made again
// without the lost member, and the recovery is not counted twice. Losses are bounded by the
// members there are, so this cannot go round for ever; stalls are always counted.
std::vector<action> elastic_core::recover_from_loss(const std::string& node, const std::string& why, time_point now) {
  const bool same_incident =
      phase_ == phase::recovering && rollback_pending_.empty() && rollback_epoch_ > 0 && rollback_epoch_ == epoch_;
  // Every member there was may go in one incident (a node with all its ranks); beyond that,
  // only replacements keep dying, and max_recoveries of those are allowed.
  const int64_t incident_bound = s_.max_replicas + s_.max_recoveries;
  if (same_incident && ++incident_losses_ > incident_bound)
    return fail(why + "; gave up: " + std::to_string(incident_losses_) +
                " members were lost while the recovery's rollback plans were out, before any trained a step (bound "
                "max_replicas + max_recoveries = " + std::to_string(incident_bound) + ")");
  auto out = rollback(why, now, same_incident);
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
  it->second.departed_step = last_step_;
  ++downs_;
  out.push_back(journal_event{"rank_down", r.name + " on " + it->second.node + ": failed: " + reason, r.name,
                              it->second.node});
  out.push_back(stop_on_agent{it->second.node, r.name, "failed: " + reason});
  auto end = fail(r.name + " failed: " + reason + " (again: " + *earlier + " failed the same way, so a replacement would too; " +
                  std::to_string(recoveries_) + " of " + std::to_string(s_.max_recoveries) + " recoveries spent)");
  out.insert(out.end(), end.begin(), end.end());
  return out;
}

std::vector<action> elastic_core::rollback(std::string why, time_point now, bool same_incident) {
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
  // Counted already: when it started waiting for replacements, or by the rollback it continues.
  const bool counted = !rollback_pending_.empty() || same_incident;
  // Journaled as "recovery" once per counted recovery: not again when it continues one.
  const bool replanned = same_incident || (!rollback_pending_.empty() && rollback_pending_continues_);
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
      rollback_pending_continues_ = replanned;
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
  rollback_pending_continues_ = false;
  replacements_lost_ = 0;
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
  // A continued rollback is journaled as its own kind: "recovery" events are the recoveries
  // counted, and carry the job's count so far (a control store keeps it for the next leader).
  journal_event e{replanned ? "recovery_replanned" : "recovery",
                  why + "; " + std::to_string(w) + " replicas roll back to the last checkpoint (epoch " +
                      std::to_string(epoch_) + ", recovery " + std::to_string(recoveries_) +
                      (replanned ? " continued" : "") + " of at most " + std::to_string(s_.max_recoveries) + ")"};
  if (!replanned) e.numbers.emplace_back("recoveries", recoveries_);
  out.push_back(std::move(e));
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
  // A member kept for its reconnect window holds the others up: this control process's view
  // settles it once, the unreachable member is down and one recovery plans without it (the
  // ranks' own views of each other never decide who is out).
  std::vector<std::pair<std::string, std::string>> unreachable;
  for (auto& [n, m] : members_)
    if (n != r.name && m.state == member_state::active && m.unreachable_since) {
      unreachable.emplace_back(n, m.unreachable_why + "; " + r.name + " stalled at step " + std::to_string(r.step) +
                                      " waiting for it");
      m.unreachable_since.reset();
    }
  if (!unreachable.empty()) return down_together(unreachable, now);
  return rollback(r.name + " stalled at step " + std::to_string(r.step) + " (" + r.reason + ")", now);
}

}  // namespace msomni::orchestrator
