// CAF actor shells of the data pipeline: a reader actor, a decode-pool actor with one worker
// actor per io.decode_workers (each owning a media_decoder, so decodes run in parallel on
// CAF's scheduler), and a tensor actor that assembles and packs batches into a bounded
// hand-off queue (batch_handoff.hpp) the consumer's thread takes them from.
// They run the same cores as data_pipeline and talk in catalog messages (credit_grant,
// stage_pressure); samples and batches travel as shared pointers, which is safe because all
// data stages of a rank live in the rank's process. CAF stays out of this header.
#pragma once

#include "data_pipeline.hpp"
#include "model/micro_batch.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace caf {
class actor_system;
}

namespace msomni::data {

class actor_pipeline {
 public:
  // Spawns the stage actors in `sys`. `state` (from save_state) positions every source
  // before the first read, so a restored pipeline never reads from the old position.
  actor_pipeline(caf::actor_system& sys, pipeline_setup setup, order_slot slot,
                 std::shared_ptr<const storage> st = make_local_storage(),
                 std::optional<std::vector<uint8_t>> state = std::nullopt);
  ~actor_pipeline();  // stops the actors
  actor_pipeline(const actor_pipeline&) = delete;
  actor_pipeline& operator=(const actor_pipeline&) = delete;

  // Blocks until the tensor actor has packed a batch. Throws std::runtime_error when the pipeline
  // failed (e.g. a source that yields only damage), with the reason. The batch stays valid
  // until the next call, which hands its buffers back to the tensor actor for reuse (a batch
  // is megabytes of floats: fresh allocations per batch cost page faults and zeroing).
  const micro_batch& next_batch();
  // The batch next_batch returned last as the model's micro-batch, packed by the tensor stage
  // in the setup's batch memory (model_batch.hpp); once per batch. Throws std::logic_error
  // when no batch memory is set or it was already taken.
  model::micro_batch take_model_batch();
  // The model batches packed and waiting, oldest first, at most `max`: what next_batch returns
  // next. Visited under the hand-off's lock, nothing copied; from the consumer's thread.
  void visit_upcoming(size_t max, const std::function<void(const model::micro_batch&)>& visit) const;
  // Position after the last batch next_batch returned (read-ahead is not included).
  std::vector<uint8_t> save_state();
  // Takes another slot at an optimizer-step boundary (throws std::logic_error mid-step): the
  // stage actors are replaced by new ones starting at the delivered position.
  void reslot(const order_slot& slot);
  // Continues from `bytes` (a save_state of this source list) under the current slot: the
  // stage actors are replaced by new ones starting there; read-ahead is dropped. Throws
  // std::invalid_argument, before anything is stopped, when the bytes are not a position for
  // these sources and this slot.
  void restore_state(std::span<const uint8_t> bytes);
  // Downgrades so far, bad-data counts and metrics, as the tensor and pool actors see them.
  uint64_t downgrades();
  bad_data_counts bad_data();
  data_metrics metrics();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace msomni::data
