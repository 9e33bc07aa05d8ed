// elastic_core, agents and placement: node agents joining, heartbeating and going down (lost
// or silent), their free slots, and where a new rank starts (near a given node: same node,
// rack, switch).
#include "elastic_core.hpp"
#include "number_text.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace msomni::orchestrator {

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
    m.name = rank_name(next_rank_id_++);
    m.node = *node;
    m.since = now;
    m.replacement = downs_ > 0;
    members_[m.name] = m;
    joining_.push_back(m.name);
    out.push_back(spawn_on_agent{*node, m.name});
    out.push_back(journal_event{"rank_spawn", m.name + " on node " + *node + " (rack " + agents_[*node].rack +
                                                  ", switch " + agents_[*node].switch_name + ")",
                                m.name, *node});
    if (near.empty()) near = *node;  // keep a data-parallel group together
  }
  return out;
}

std::vector<std::string> elastic_core::idle_nodes() const {
  std::vector<std::string> out;
  if (phase_ != phase::running || !joining_.empty()) return out;
  for (const auto& [node, a] : agents_) {
    if (!a.alive || node == s_.in_process_agent) continue;
    bool held_one = false, holds_one = false;
    for (const auto& [n, m] : members_) {
      if (m.node != node) continue;
      held_one = true;
      holds_one = holds_one || (m.state != member_state::left && m.state != member_state::dead);
    }
    if (held_one && !holds_one) out.push_back(node);
  }
  return out;
}

std::vector<action> elastic_core::on_agent_released(const std::string& node) {
  std::vector<action> out;
  const auto it = agents_.find(node);
  if (it == agents_.end() || !it->second.alive) return out;
  it->second.alive = false;
  out.push_back(journal_event{"agent_released", node + " was given back to the cluster; no rank is placed there again",
                              "", node});
  return out;
}

std::vector<action> elastic_core::on_agent(const agent_info& a, time_point now) {
  std::vector<action> out;
  const bool known = agents_.count(a.node) > 0;
  agents_[a.node] = a;
  agent_heard_[a.node] = now;
  if (!known)
    out.push_back(journal_event{"agent_joined", a.node + " (rack " + a.rack + ", switch " + a.switch_name + ", " +
                                                    std::to_string(a.slots) + " slots)",
                                "", a.node});
  if (!first_agent_at_) first_agent_at_ = now;
  auto more = maybe_place_first(now);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// The first ranks: once the agents offer enough slots and every expected agent joined (or
// agent_gather passed since the first did).
std::vector<action> elastic_core::maybe_place_first(time_point now) {
  std::vector<action> out;
  if (phase_ != phase::starting || placed_first_ || !first_agent_at_) return out;
  if (s_.adopt_window > nanos{0} && !adoption_closed_) {
    if (now - *first_agent_at_ < s_.adopt_window) return out;
    out = close_adoption(now);
  }
  int64_t alive = 0;
  for (const auto& [node, a] : agents_) alive += a.alive;
  const bool all_in = alive >= s_.expected_agents;
  const bool gather_over = now - *first_agent_at_ >= s_.agent_gather;
  // Fewer slots than the target: once agent_gather has passed since the first agent joined,
  // the job starts on the largest world the slots allow (at least min_replicas) and tops up
  // as slots come; below min_replicas it keeps waiting for agents.
  int64_t place = target_;
  if (free_slots() < target_) {
    if (!gather_over) return out;
    place = largest_world_at_most(free_slots());
    if (place == 0) return out;
  }
  if (!all_in && !gather_over) return out;
  if (!all_in || place < target_)
    out.push_back(journal_event{"placement_partial", std::to_string(alive) + " of the " + std::to_string(s_.expected_agents) +
                                                         " expected node agents joined within " +
                                                         seconds_text(s_.agent_gather) + " s with " +
                                                         std::to_string(free_slots()) + " free slots; placing " +
                                                         std::to_string(place) + " of " + std::to_string(target_) +
                                                         " replicas on those"});
  placed_first_ = true;
  auto more = spawn(place, "", now);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

void elastic_core::on_heartbeat(const std::string& node, time_point now) {
  if (const auto it = agent_heard_.find(node); it != agent_heard_.end()) it->second = std::max(it->second, now);
}

// Agents (other than the one in this process) not heard from within agent_silence_limit.
std::vector<action> elastic_core::declare_silent_agents_down(time_point now) {
  std::vector<action> out;
  if (phase_ == phase::done) return out;
  std::vector<std::pair<std::string, nanos>> silent;
  for (const auto& [node, a] : agents_) {
    const nanos quiet = now - agent_heard_.at(node);
    if (a.alive && node != s_.in_process_agent && quiet > s_.agent_silence_limit) silent.emplace_back(node, quiet);
  }
  for (const auto& [node, quiet] : silent) {
    const auto whole_s = std::chrono::duration_cast<std::chrono::seconds>(quiet).count();
    auto more = on_agent_down(node, "no heartbeat for " + std::to_string(whole_s) + " s", now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::vector<action> elastic_core::on_agent_down(const std::string& node, const std::string& why, time_point now) {
  std::vector<action> out;
  if (!agents_.count(node) || !agents_[node].alive) return out;
  agents_[node].alive = false;
  out.push_back(journal_event{"agent_down", node + ": " + why, "", node});
  std::vector<std::pair<std::string, std::string>> lost;  // every rank of the node, at once
  for (const auto& [n, m] : members_)
    if (m.node == node && m.state != member_state::left && m.state != member_state::dead)
      lost.emplace_back(n, "its node agent " + node + " is down");
  auto more = down_together(lost, now);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// Members lost in one incident are all marked down before anything is planned: one recovery
// for all of them (rank by rank, the first plan would name the next lost member and each
// would spend a recovery).
std::vector<action> elastic_core::down_together(const std::vector<std::pair<std::string, std::string>>& lost,
                                                time_point now) {
  std::vector<action> out;
  deferring_losses_ = true;
  for (const auto& [name, why] : lost) {
    auto more = on_rank_down(name, why, now);
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

}  // namespace msomni::orchestrator
