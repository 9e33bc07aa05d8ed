// step_balance (see step_balance.hpp).
#include "step_balance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace msomni::data {

std::vector<std::vector<uint64_t>> deal_step(uint32_t world, int64_t grad_accum, int64_t micro_batch) {
  std::vector<std::vector<uint64_t>> by_rank(world);
  const uint64_t g = uint64_t(world) * uint64_t(grad_accum) * uint64_t(micro_batch), mb = uint64_t(micro_batch);
  for (uint64_t off = 0; off < g; ++off) by_rank[(off / mb) % world].push_back(off);
  return by_rank;
}

std::vector<std::vector<uint64_t>> balance_step(const std::vector<double>& costs, uint32_t world, int64_t grad_accum,
                                                int64_t micro_batch) {
  const uint64_t per_rank = uint64_t(grad_accum) * uint64_t(micro_batch);
  if (world == 0 || costs.size() != per_rank * world)
    throw std::invalid_argument("balance_step: " + std::to_string(costs.size()) + " costs for " + std::to_string(world) +
                                " ranks of " + std::to_string(per_rank) + " samples");
  std::vector<uint64_t> order(costs.size());
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return costs[a] > costs[b]; });
  std::vector<std::vector<uint64_t>> by_rank(world);
  std::vector<double> load(world, 0.0);
  for (uint64_t o : order) {
    uint32_t best = world;
    for (uint32_t r = 0; r < world; ++r)
      if (by_rank[r].size() < per_rank && (best == world || load[r] < load[best])) best = r;
    by_rank[best].push_back(o);
    load[best] += costs[o];
  }
  // Swaps between the most and the least loaded rank while one narrows their gap (bounded).
  for (int round = 0; round < 64 && world > 1; ++round) {
    const auto hi = uint32_t(std::max_element(load.begin(), load.end()) - load.begin());
    const auto lo = uint32_t(std::min_element(load.begin(), load.end()) - load.begin());
    const double gap = load[hi] - load[lo];
    double best_gain = 0;
    size_t bi = 0, bj = 0;
    for (size_t i = 0; i < by_rank[hi].size(); ++i)
      for (size_t j = 0; j < by_rank[lo].size(); ++j) {
        const double d = costs[by_rank[hi][i]] - costs[by_rank[lo][j]];
        const double gain = gap - std::abs(gap - 2 * d);  // how much the gap shrinks
        if (d > 0 && gain > best_gain + 1e-12 * gap) best_gain = gain, bi = i, bj = j;
      }
    if (best_gain <= 0) break;
    const double d = costs[by_rank[hi][bi]] - costs[by_rank[lo][bj]];
    std::swap(by_rank[hi][bi], by_rank[lo][bj]);
    load[hi] -= d;
    load[lo] += d;
  }
  // Similar lengths together: each rank's samples by cost (ties: offset), cut in order.
  for (auto& mine : by_rank)
    std::sort(mine.begin(), mine.end(), [&](uint64_t a, uint64_t b) { return costs[a] != costs[b] ? costs[a] > costs[b] : a < b; });
  return by_rank;
}

double predicted_imbalance(const std::vector<double>& costs, const std::vector<std::vector<uint64_t>>& by_rank) {
  if (by_rank.empty()) return 1.0;
  double max = 0, sum = 0;
  for (const auto& mine : by_rank) {
    double load = 0;
    for (uint64_t o : mine) load += costs.at(o);
    max = std::max(max, load);
    sum += load;
  }
  const double mean = sum / double(by_rank.size());
  return mean > 0 ? max / mean : 1.0;
}

}  // namespace msomni::data
