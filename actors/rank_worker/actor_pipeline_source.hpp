// Batches from the data stage actors (io.pipeline = "actors", the default): a reader, a
// decode pool with io.decode_workers worker actors and a tensor stage run on the rank's
// actor system, so decoding overlaps the training thread's compute; the rank pulls one
// packed batch per micro-step. Per-source prefetch depths and credits bound what is read
// ahead. While the tensor stage cannot keep up, videos are decoded keyframe-only
// (io.downgrade_video); each such sample is counted in downgraded_total().
//
// The saved state is the position after the last batch delivered to the trainer (read-ahead
// excluded), so checkpoints, reslots and rollbacks continue exactly where training is. A
// resumed run delivers the same samples in the same slots as a straight one; what can differ
// is only the frames of a video that one of the two runs downgraded (the downgrade follows
// live timing), which resume cannot replay.
#pragma once

#include "batch_source.hpp"
#include "data_actors.hpp"

#include <memory>
#include <memory_resource>

namespace caf {
class actor_system;
}

namespace msomni::config {
struct job_config;
}

namespace msomni::rank_worker {

class actor_pipeline_source final : public batch_source {
 public:
  // Indexes the sources and spawns the stage actors in `sys` (which needs threads for the
  // decode workers: see rank_actor_threads in batch_source_factory.hpp).
  // The tensor stage packs the model's batches into `batch_memory` (null: ordinary memory),
  // so the training thread only takes them.
  actor_pipeline_source(caf::actor_system& sys, const config::job_config& cfg, data_slot slot,
                        std::shared_ptr<std::pmr::memory_resource> batch_memory = nullptr, data_watch watch = {});

  model::micro_batch next() override;
  void reslot(const data_slot& slot) override;
  std::vector<uint8_t> save_state() const override { return pipe_->save_state(); }
  void restore_state(std::span<const uint8_t> bytes) override { pipe_->restore_state(bytes); }
  uint64_t downgraded_total() const override { return downgraded_; }
  std::vector<msg::bad_sample_count> bad_sample_totals() const override;
  bad_sample_listing bad_samples_listed() const override;
  std::vector<msg::batch_features> upcoming_features(size_t max) const override;

 private:
  std::unique_ptr<data::actor_pipeline> pipe_;  // its queries are asks, hence not const
  uint64_t downgraded_ = 0;
};

}  // namespace msomni::rank_worker
