// Generated micro-batches for synthetic://shapes and synthetic://text sources: coloured
// squares at a named position ("a red square at the top left"), two-frame videos of a square
// moving right ("a blue square moving right"), and text-only captions. Sources are drawn by
// weight per sample. Every sample is a pure function of (seed, global sample index), laid
// out over ranks as batch_source.hpp describes, so the state is one global counter (the
// same on every rank), resume is exact, and a resize keeps the sample order.
#pragma once

#include "batch_source.hpp"
#include "config/job_config.hpp"
#include "core/rng.hpp"

#include <memory>
#include <memory_resource>
#include <string>

namespace msomni::rank_worker {

class synthetic_source final : public batch_source {
 public:
  // Throws std::invalid_argument when a source is not synthetic:// or the shape is unusable.
  // The patches are packed into `batch_memory` (null: ordinary memory).
  synthetic_source(const config::job_config& cfg, data_slot slot,
                   std::shared_ptr<std::pmr::memory_resource> batch_memory = nullptr);

  model::micro_batch next() override;
  void reslot(const data_slot& slot) override;
  std::vector<uint8_t> save_state() const override;
  void restore_state(std::span<const uint8_t> bytes) override;

  int64_t text_len() const { return text_len_; }
  // Global samples consumed by completed optimizer steps.
  uint64_t global_position() const { return step_base_; }

 private:
  void draw_sample(model::micro_batch& mb, int64_t b, rng_stream& rng) const;
  void check_slot(const data_slot& slot) const;

  config::model_section model_;
  std::vector<config::data_source> sources_;
  double total_weight_ = 0;
  int64_t micro_batch_;
  int64_t text_len_;
  std::shared_ptr<std::pmr::memory_resource> batch_memory_;
  uint64_t seed_;
  data_slot slot_;
  uint64_t step_base_ = 0;  // first global sample of the current optimizer step
  int64_t micro_ = 0;       // micro-steps taken in the current optimizer step
};

}  // namespace msomni::rank_worker
