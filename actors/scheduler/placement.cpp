// Placement: per-GPU owners, per-node free counts, best-fit node / switch selection.
#include "placement.hpp"

#include <algorithm>
#include <stdexcept>

namespace msomni::sched {

topology topology::uniform(uint32_t gpus, uint32_t gpus_per_node, uint32_t nodes_per_switch) {
  topology t;
  t.nodes_per_switch = std::max<uint32_t>(1, nodes_per_switch);
  gpus_per_node = std::max<uint32_t>(1, gpus_per_node);
  for (uint32_t left = gpus; left > 0;) {
    uint32_t n = std::min(left, gpus_per_node);
    t.node_gpus.push_back(n);
    left -= n;
  }
  return t;
}

uint32_t topology::total_gpus() const {
  uint32_t sum = 0;
  for (uint32_t g : node_gpus) sum += g;
  return sum;
}

placement::placement(topology t) : topo_(std::move(t)) {
  topo_.nodes_per_switch = std::max<uint32_t>(1, topo_.nodes_per_switch);
  for (uint32_t n = 0; n < topo_.node_gpus.size(); ++n) {
    node_first_.push_back(static_cast<uint32_t>(owner_.size()));
    node_free_.push_back(topo_.node_gpus[n]);
    for (uint32_t g = 0; g < topo_.node_gpus[n]; ++g) {
      owner_.emplace_back();
      gpu_node_.push_back(n);
    }
  }
  free_ = static_cast<uint32_t>(owner_.size());
}

void placement::collect(uint32_t node, uint32_t want, std::vector<uint32_t>& out) const {
  uint32_t first = node_first_[node];
  for (uint32_t g = first; g < first + topo_.node_gpus[node] && want > 0; ++g) {
    if (owner_[g].empty()) {
      out.push_back(g);
      --want;
    }
  }
}

std::vector<uint32_t> placement::nodes_by_free_desc(uint32_t first_node, uint32_t end_node) const {
  std::vector<uint32_t> nodes;
  for (uint32_t n = first_node; n < end_node; ++n)
    if (node_free_[n] > 0) nodes.push_back(n);
  // Fullest-free nodes first: fewer nodes per job means fewer cross-node links.
  std::stable_sort(nodes.begin(), nodes.end(),
                   [&](uint32_t a, uint32_t b) { return node_free_[a] > node_free_[b]; });
  return nodes;
}

std::optional<placement_choice> placement::choose(uint32_t count) const {
  if (count == 0 || count > free_) return std::nullopt;
  placement_choice c;
  uint32_t nodes = static_cast<uint32_t>(node_free_.size());
  // 1. One node, best fit: leaves the emptier nodes whole for the big jobs to come.
  int64_t best = -1;
  for (uint32_t n = 0; n < nodes; ++n)
    if (node_free_[n] >= count && (best < 0 || node_free_[n] < node_free_[best])) best = n;
  if (best >= 0) {
    collect(static_cast<uint32_t>(best), count, c.gpus);
    c.single_node = c.single_switch = true;
    return c;
  }
  // 2. One switch, best fit by the switch's free GPUs.
  uint32_t per = topo_.nodes_per_switch;
  uint32_t switches = (nodes + per - 1) / per;
  int64_t best_sw = -1;
  uint32_t best_free = 0;
  for (uint32_t s = 0; s < switches; ++s) {
    uint32_t f = 0;
    for (uint32_t n = s * per; n < std::min(nodes, (s + 1) * per); ++n) f += node_free_[n];
    if (f >= count && (best_sw < 0 || f < best_free)) {
      best_sw = s;
      best_free = f;
    }
  }
  uint32_t first = 0, end = nodes;
  if (best_sw >= 0) {
    first = static_cast<uint32_t>(best_sw) * per;
    end = std::min(nodes, first + per);
    c.single_switch = true;
  }
  // 3. Otherwise across switches; the reason log says so.
  uint32_t want = count;
  for (uint32_t n : nodes_by_free_desc(first, end)) {
    uint32_t take = std::min(want, node_free_[n]);
    collect(n, take, c.gpus);
    want -= take;
    if (want == 0) break;
  }
  if (want != 0) return std::nullopt;
  return c;
}

std::optional<placement_choice> placement::choose_near(uint32_t count,
                                                       const std::vector<uint32_t>& near) const {
  if (count == 0 || count > free_) return std::nullopt;
  placement_choice c;
  uint32_t want = count;
  // Same nodes first, then the rest of the same switch, then anything.
  std::vector<uint32_t> tried(node_free_.size(), 0);
  for (uint32_t g : near) {
    uint32_t n = gpu_node_.at(g);
    if (tried[n]++) continue;
    uint32_t take = std::min(want, node_free_[n]);
    collect(n, take, c.gpus);
    want -= take;
  }
  if (want > 0 && !near.empty()) {
    uint32_t per = topo_.nodes_per_switch;
    uint32_t first = (gpu_node_.at(near.front()) / per) * per;
    uint32_t end = std::min<uint32_t>(static_cast<uint32_t>(node_free_.size()), first + per);
    for (uint32_t n : nodes_by_free_desc(first, end)) {
      if (tried[n]++ || want == 0) continue;
      uint32_t take = std::min(want, node_free_[n]);
      collect(n, take, c.gpus);
      want -= take;
    }
  }
  if (want > 0) {
    for (uint32_t n : nodes_by_free_desc(0, static_cast<uint32_t>(node_free_.size()))) {
      if (tried[n]++ || want == 0) continue;
      uint32_t take = std::min(want, node_free_[n]);
      collect(n, take, c.gpus);
      want -= take;
    }
  }
  if (want != 0) return std::nullopt;
  return c;
}

void placement::take(const std::string& job, const std::vector<uint32_t>& gpus) {
  for (uint32_t g : gpus)
    if (!owner_.at(g).empty())
      throw std::logic_error("GPU " + std::to_string(g) + " of " + owner_[g] +
                             " allocated again to " + job);
  for (uint32_t g : gpus) {
    owner_[g] = job;
    --node_free_[gpu_node_[g]];
  }
  free_ -= static_cast<uint32_t>(gpus.size());
}

void placement::give_back(const std::string& job, const std::vector<uint32_t>& gpus) {
  for (uint32_t g : gpus) {
    if (owner_.at(g) != job)
      throw std::logic_error("GPU " + std::to_string(g) + " released by " + job +
                             " but owned by '" + owner_[g] + "'");
    owner_[g].clear();
    ++node_free_[gpu_node_[g]];
    ++free_;
  }
}

}  // namespace msomni::sched
