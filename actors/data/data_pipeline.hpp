// The data pipeline of one rank, driven in the caller's thread: reader -> decoder ->
// tensorizer through the same policy cores and credits the actor shells use, with decoding
// done inline. It is the deterministic reference path (cursor tests, replay, benches), and
// the simple API for a rank process:
//
//   auto setup = data::make_pipeline_setup(job_config);          // validates and derives limits
//   data::data_pipeline pipe(setup, {rank, world, grad_accum, micro_batch});
//   data::micro_batch b = pipe.next_batch();                     // blocks while decoding
//   std::vector<uint8_t> s = pipe.save_state();                  // after the last batch returned
//   pipe.restore_state(s);                                       // next_batch continues from there
//   pipe.reslot({rank2, world2, grad_accum2, micro_batch});      // at a step boundary
//
// The batches are this rank's share of the job's one global sample order (global_order.hpp):
// the same samples make up each optimizer step at every world size, and the state saved at a
// step boundary is the same on every rank and restores under any slot.
//
// Inline decoding never leaves the tensor stage behind, so this path never downgrades;
// downgrades happen where stages run concurrently (actor shells, the simulator).
#pragma once

#include "core/clock.hpp"
#include "data_metrics.hpp"
#include "flow_cores.hpp"
#include "live_data_metrics.hpp"
#include "media_decoder.hpp"
#include "mismatched_names.hpp"
#include "micro_batch.hpp"
#include "sample_cost.hpp"
#include "source_reader.hpp"

#include "messages/data_messages.hpp"

#include <memory>
#include <memory_resource>
#include <span>
#include <vector>

namespace msomni::config {
struct job_config;
}

namespace msomni::metrics {
class metrics_registry;
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
  uint64_t max_image_pixels = uint64_t(config::default_max_image_pixels);  // io.max_image_pixels
  uint64_t max_video_pixels = uint64_t(config::default_max_video_pixels);  // io.max_video_pixels
  // data.balance = "steps": each step's samples are placed on ranks and micro-batches by
  // their predicted cost (step_balance.hpp) with these weights; `balance` is the cost function
  // over the indexed sources (attach_balance), shared by every stage's order_core.
  bool balance_steps = false;
  cost_weights cost;
  std::shared_ptr<const draw_cost> balance;
  // The rank's batch memory (kernels' make_batch_memory: pinned host memory on a CUDA rank).
  // When set, the actor pipeline's tensor stage also packs each batch as the model's
  // micro-batch in it (model_batch.hpp), off the training thread; actor_pipeline::
  // take_model_batch hands it over. Unset (tests, tools), only the data batch is packed.
  std::shared_ptr<std::pmr::memory_resource> batch_memory;
  // The rank's metrics, when they are on (both null when off): the stage actors account their
  // messages in `registry`, and both pipelines keep `live` up to date for its refresher.
  std::shared_ptr<metrics::metrics_registry> registry;
  std::shared_ptr<live_data_metrics> live;
  // TEST/DEBUG KNOB, never set from a job config: the actor pipeline's tensor stage sleeps this
  // many ms per converted frame after packing each batch, inside the timed packing, as if
  // packing were that slow. It drives the live downgrade path in tests
  // (tests/data/actor_pipeline_test.cpp); the in-thread data_pipeline ignores it.
  double test_extra_pack_ms_per_frame = 0;
};

// What each decoder of a setup decodes to, and the media it refuses undecoded.
decode_options decode_options_of(const pipeline_setup& setup);

// The sources of a setup, each listed once (tar headers of every shard); shared by every
// reader and decode worker of a rank, and kept across restores and reslots.
std::shared_ptr<const source_list> index_sources(const pipeline_setup& setup, const storage& st);
// The global order's mixer for a setup (the same on every rank).
mixer_core make_mixer(const pipeline_setup& setup);
// With balance_steps: sets setup.balance to the costs of the indexed `sources`.
void attach_balance(pipeline_setup& setup, const std::shared_ptr<const source_list>& sources);
// The order every stage of a rank follows: the mixer, the slot and the balance of a setup.
order_core make_order(const pipeline_setup& setup, const order_slot& slot);

// Per-source depth = ceil(prefetch_depth * micro_batch * mix share * modality weight / mean
// modality weight), clamped to [2, queue_capacity]. Throws std::invalid_argument on an
// unusable config (no sources, synthetic:// uris, a shape that leaves no text tokens).
pipeline_setup make_pipeline_setup(const config::job_config& cfg);

class data_pipeline {
 public:
  // Throws std::invalid_argument when the slot is unusable or its micro_batch differs from the
  // setup's batch size.
  data_pipeline(pipeline_setup setup, order_slot slot, std::shared_ptr<const storage> st = make_local_storage(),
                const clock* clk = nullptr);
  ~data_pipeline();

  micro_batch next_batch();
  std::vector<uint8_t> save_state() const;
  // Under the current slot; a position taken mid-step must come from the same slot.
  void restore_state(std::span<const uint8_t> bytes);
  // Takes another slot at an optimizer-step boundary (throws std::logic_error mid-step),
  // keeping the global position; read-ahead of the old slot is dropped.
  void reslot(const order_slot& slot);
  pipeline_position position() const { return tensor_->position_after_last_batch(); }
  // Every source's readable cursor (epoch, shard position, offset, draws) at position().
  std::vector<msg::source_cursor> cursors() const;
  const order_slot& slot() const noexcept { return slot_; }

  const data_metrics& metrics() const noexcept { return metrics_; }
  const bad_data_counts& bad_data() const noexcept { return bad_; }
  const pipeline_setup& setup() const noexcept { return setup_; }

 private:
  bool step();  // one round of reads and decodes; false when nothing could move
  void start_at(const pipeline_position& p, const order_slot& slot);
  void publish_live(const live_data_metrics::bad_counts& bad_before);

  pipeline_setup setup_;
  order_slot slot_;
  std::shared_ptr<const storage> storage_;
  std::unique_ptr<real_clock> own_clock_;
  const clock* clock_;
  time_point started_;
  std::shared_ptr<const source_list> sources_;
  std::unique_ptr<own_reader> reader_;
  reader_core reader_core_;
  decode_pool_core pool_;
  std::unique_ptr<tensor_core> tensor_;
  std::shared_ptr<pixel_pool> pixels_ = std::make_shared<pixel_pool>();  // decoder_'s output buffers, recycled
  media_decoder decoder_;
  sample_fetcher repair_;  // replacements of bad samples (sample_repair.hpp)
  data_metrics metrics_;
  mismatched_names mismatched_;  // samples decoded by bytes another format than their names
  bad_data_counts bad_;
};

}  // namespace msomni::data
