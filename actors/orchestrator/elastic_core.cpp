// elastic_core (see elastic_core.hpp): the world-size arithmetic every phase shares, the
// plans, and the rules driven by time alone (agent silence, grace periods, ready timeouts).
// The rest of the class lives by concern: elastic_agents.cpp (agents, heartbeats,
// placement), elastic_phases.cpp (start, joins, steps, the end), elastic_recovery.cpp
// (losses, rollbacks, replacements), elastic_control.cpp (the CLI verbs), elastic_status.cpp
// (what `msomni status` shows).
#include "elastic_core.hpp"

#include "number_text.hpp"

#include <algorithm>
#include <utility>

namespace msomni::orchestrator {

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

std::string rank_name(uint64_t id) { return "rank-" + std::to_string(id); }

std::optional<uint64_t> rank_id_of(const std::string& name) {
  constexpr std::string_view prefix = "rank-";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return v;
}

elastic_core::elastic_core(elastic_settings s)
    : s_(s),
      epoch_(s.epochs_before),
      next_rank_id_(s.rank_ids_before),
      target_(s.replicas),
      recoveries_(std::max<int64_t>(0, s.recoveries_spent)) {}

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

send_plan elastic_core::make_plan(std::vector<std::string> members, msg::state_source source, bool checkpoint_first,
                                  std::vector<std::string> also_to, std::string reason) {
  send_plan p;
  p.plan.epoch = ++epoch_;
  p.plan.members = members;
  for (const auto& n : members)
    if (auto& m = members_.at(n); m.member_since == 0) m.member_since = epoch_;
  for (const auto& n : members) p.plan.addresses.push_back(members_.at(n).address);
  p.plan.grad_accum = members.empty() ? 1 : grad_accum_for(static_cast<int64_t>(members.size())).value_or(1);
  p.plan.source = source;
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

std::vector<action> elastic_core::on_tick(time_point now) {
  std::vector<action> out = declare_silent_agents_down(now);
  if (stop_queued_ && phase_ == phase::running) {
    auto o = stop_now(now);
    out.insert(out.end(), o.actions.begin(), o.actions.end());
  }
  {
    auto late = declare_unreconnected_down(now);
    out.insert(out.end(), late.begin(), late.end());
  }
  {
    auto first = maybe_place_first(now);
    out.insert(out.end(), first.begin(), first.end());
  }
  if (phase_ == phase::shrinking && now >= deadline_) {
    std::vector<std::string> late;
    for (const auto& [n, m] : members_)
      if (m.state == member_state::leaving) late.push_back(n);
    for (const auto& n : late) {
      members_.at(n).state = member_state::dead;
      members_.at(n).departed_step = last_step_;
      out.push_back(journal_event{"grace_period_expired", n + " did not leave within " + seconds_text(s_.grace_period) +
                                                              " s; stopping it", n,
                                  members_.at(n).node});
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
    auto more = on_rank_down(n, "not ready within " + seconds_text(s_.ready_timeout) + " s", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace msomni::orchestrator
