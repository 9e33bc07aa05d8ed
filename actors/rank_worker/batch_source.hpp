// Where a rank worker's micro-batches come from: the data pipeline for real datasets, or
// the synthetic generator for synthetic:// sources. Positions are saveable so a checkpoint
// resumes the exact batch sequence.
#pragma once

#include "model/micro_batch.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace msomni::rank_worker {

class batch_source {
 public:
  virtual ~batch_source() = default;
  virtual model::micro_batch next() = 0;
  virtual std::vector<uint8_t> save_state() const = 0;
  virtual void restore_state(std::span<const uint8_t> bytes) = 0;
};

}  // namespace msomni::rank_worker
