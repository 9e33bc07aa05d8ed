// Generated micro-batches for synthetic://shapes and synthetic://text sources: coloured
// squares at a named position ("a red square at the top left"), two-frame videos of a square
// moving right ("a blue square moving right"), and text-only captions. Sources are drawn by
// weight per sample. Every batch is a pure function of (seed, rank, batch index), so the
// state is one counter and resume is exact.
#pragma once

#include "batch_source.hpp"
#include "config/job_config.hpp"
#include "core/rng.hpp"

#include <string>

namespace msomni::rank_worker {

class synthetic_source final : public batch_source {
 public:
  // Throws std::invalid_argument when a source is not synthetic:// or the shape is unusable.
  synthetic_source(const config::job_config& cfg, uint32_t rank);

  model::micro_batch next() override;
  std::vector<uint8_t> save_state() const override;
  void restore_state(std::span<const uint8_t> bytes) override;

  int64_t text_len() const { return text_len_; }
  uint64_t batches_made() const { return index_; }

 private:
  void draw_sample(model::micro_batch& mb, int64_t b, rng_stream& rng) const;

  config::model_section model_;
  std::vector<config::data_source> sources_;
  double total_weight_ = 0;
  int64_t micro_batch_;
  int64_t text_len_;
  uint64_t seed_;
  uint32_t rank_;
  uint64_t index_ = 0;
};

}  // namespace msomni::rank_worker
