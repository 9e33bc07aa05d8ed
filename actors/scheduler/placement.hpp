// GPU ownership and topology-aware placement: a data-parallel group goes under one switch
// when it can (best fit, fewest free GPUs left behind), a small job onto one node.
#pragma once

#include "scheduler_types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msomni::sched {

struct placement_choice {
  std::vector<uint32_t> gpus;
  bool single_node = false;
  bool single_switch = false;
};

class placement {
 public:
  explicit placement(topology t);

  uint32_t total() const noexcept { return static_cast<uint32_t>(owner_.size()); }
  uint32_t free_count() const noexcept { return free_; }
  const std::string& owner(uint32_t gpu) const { return owner_.at(gpu); }
  uint32_t node_of(uint32_t gpu) const { return gpu_node_.at(gpu); }
  uint32_t switch_of(uint32_t gpu) const { return gpu_node_.at(gpu) / topo_.nodes_per_switch; }

  // Chooses `count` free GPUs, or nothing when fewer are free. Does not take them.
  std::optional<placement_choice> choose(uint32_t count) const;
  // Like choose, but preferring GPUs near `near` (growing a job next to its replicas).
  std::optional<placement_choice> choose_near(uint32_t count, const std::vector<uint32_t>& near) const;

  // Throws std::logic_error on a GPU that is already owned (the double-allocation guard).
  void take(const std::string& job, const std::vector<uint32_t>& gpus);
  void give_back(const std::string& job, const std::vector<uint32_t>& gpus);

 private:
  void collect(uint32_t node, uint32_t want, std::vector<uint32_t>& out) const;
  std::vector<uint32_t> nodes_by_free_desc(uint32_t first_node, uint32_t end_node) const;
  topology topo_;
  std::vector<uint32_t> node_free_;
  std::vector<std::string> owner_;     // "" = free
  std::vector<uint32_t> gpu_node_;
  std::vector<uint32_t> node_first_;   // first GPU id of each node
  uint32_t free_ = 0;
};

}  // namespace msomni::sched
