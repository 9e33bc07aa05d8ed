// The data pipeline of one rank, driven in the caller's thread: reader -> decoder ->
// tensorizer through the same policy cores and credits the actor shells use, with decoding
// done inline. It is the deterministic reference path (cursor tests, replay, benches), and
// the simple API for a rank process:
//
//   auto setup = data::make_pipeline_setup(job_config);          // validates and derives limits
//   data::data_pipeline pipe(setup, {rank, world});
//   data::micro_batch b = pipe.next_batch();                     // blocks while decoding
//   std::vector<uint8_t> s = pipe.save_state();                  // after the last batch returned
//   pipe.restore_state(s);                                       // next_batch continues from there
//
// Inline decoding never leaves the tensor stage behind, so this path never downgrades;
// downgrades happen where stages run concurrently (actor shells, the simulator).
#pragma once

#include "core/clock.hpp"
#include "data_metrics.hpp"
#include "flow_cores.hpp"
#include "media_decoder.hpp"
#include "micro_batch.hpp"
#include "source_reader.hpp"

#include <memory>
#include <span>
#include <vector>

namespace msomni::config {
struct job_config;
}

namespace msomni::data {

// Everything the stages need, derived once from the job config (plain values, testable).
struct pipeline_setup {
  std::vector<source_spec> sources;
  batch_shape shape;
  mix_strategy mix = mix_strategy::balanced_by_weight;
  bool shuffle = true;
  uint64_t seed = 0;
  std::vector<uint32_t> depth;   // per-source prefetch depth (credits on each link)
  pool_limits pool;
  uint32_t batch_queue = 3;      // packed batches held ahead of the consumer
  double max_data_wait_ms = 200;
};

// Per-source depth = ceil(prefetch_depth * micro_batch * mix share * modality weight / mean
// modality weight), clamped to [2, queue_capacity]. Throws std::invalid_argument on an
// unusable config (no sources, synthetic:// uris, a shape that leaves no text tokens).
pipeline_setup make_pipeline_setup(const config::job_config& cfg);

class data_pipeline {
 public:
  data_pipeline(pipeline_setup setup, rank_slot slot, std::shared_ptr<const storage> st = make_local_storage(),
                const clock* clk = nullptr);
  ~data_pipeline();

  micro_batch next_batch();
  std::vector<uint8_t> save_state() const;
  void restore_state(std::span<const uint8_t> bytes);
  pipeline_position position() const { return tensor_.position_after_last_batch(); }

  const data_metrics& metrics() const noexcept { return metrics_; }
  const bad_data_counts& bad_data() const noexcept { return bad_; }
  const pipeline_setup& setup() const noexcept { return setup_; }

 private:
  bool step();  // one round of reads and decodes; false when nothing could move

  pipeline_setup setup_;
  rank_slot slot_;
  std::unique_ptr<real_clock> own_clock_;
  const clock* clock_;
  time_point started_;
  std::vector<source_reader> readers_;
  reader_core reader_core_;
  decode_pool_core pool_;
  tensor_core tensor_;
  media_decoder decoder_;
  data_metrics metrics_;
  bad_data_counts bad_;
};

}  // namespace msomni::data
