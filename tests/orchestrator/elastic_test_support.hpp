// Helpers shared by the elastic core's tests: the actions of one kind, and settings of a
// small job whose global batch of 8 (micro-batch 2) divides by 1, 2 and 4 replicas.
#pragma once

#include "elastic_core.hpp"

#include <vector>

namespace msomni::orchestrator::testing {

template <class T>
std::vector<T> all_of(const std::vector<action>& acts) {
  std::vector<T> out;
  for (const auto& a : acts)
    if (auto* p = std::get_if<T>(&a)) out.push_back(*p);
  return out;
}

inline elastic_settings small_job(int64_t replicas, int64_t min_replicas, int64_t max_replicas) {
  elastic_settings s;
  s.total_steps = 100;
  s.global_batch = 8;
  s.micro_batch = 2;
  s.replicas = replicas;
  s.min_replicas = min_replicas;
  s.max_replicas = max_replicas;
  return s;
}

}  // namespace msomni::orchestrator::testing
