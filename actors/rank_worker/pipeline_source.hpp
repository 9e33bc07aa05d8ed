// Batches from the in-thread data pipeline (WebDataset shards decoded with FFmpeg in the
// training thread: io.pipeline = "inline", the deterministic reference), converted to
// the model's micro-batch (data/model_batch.hpp). The pipeline follows the global sample order
// of batch_source.hpp, so reslot keeps the per-step samples of a static run and the saved
// state (the global position at a step boundary) is the same on every rank.
#pragma once

#include "batch_source.hpp"
#include "data_pipeline.hpp"

#include <memory>
#include <memory_resource>

namespace msomni::rank_worker {

class pipeline_source final : public batch_source {
 public:
  // The model's batches are packed into `batch_memory` (null: ordinary memory).
  pipeline_source(const config::job_config& cfg, data_slot slot,
                  std::shared_ptr<std::pmr::memory_resource> batch_memory = nullptr, data_watch watch = {});

  model::micro_batch next() override;
  // Only at an optimizer-step boundary (std::logic_error otherwise); drops read-ahead.
  void reslot(const data_slot& slot) override;
  std::vector<uint8_t> save_state() const override { return pipe_->save_state(); }
  void restore_state(std::span<const uint8_t> bytes) override { pipe_->restore_state(bytes); }

  uint64_t downgraded_total() const override { return downgraded_; }
  // Every reason of data::bad_reason, counted since this source was built.
  std::vector<msg::bad_sample_count> bad_sample_totals() const override;
  bad_sample_listing bad_samples_listed() const override;
  const data::data_pipeline& pipeline() const { return *pipe_; }

 private:
  std::unique_ptr<data::data_pipeline> pipe_;
  data_slot slot_;
  uint64_t downgraded_ = 0;
  std::shared_ptr<std::pmr::memory_resource> batch_memory_;
};

// What both pipeline sources share: the setup of a job config (data paths resolved against
// the config's directory), a slot in the data pipeline's terms, bad-sample counts in the
// step record's terms, and the downgraded samples of a batch.
data::pipeline_setup pipeline_setup_for(const config::job_config& cfg, data_watch watch = {});
data::order_slot order_slot_of(const data_slot& s);
std::vector<msg::bad_sample_count> bad_sample_totals_of(const data::bad_data_counts& bad);
bad_sample_listing bad_samples_listed_of(const data::bad_data_counts& bad);
uint64_t downgraded_in(const data::micro_batch& b);

// True when every data source is synthetic:// (then synthetic_source applies).
bool all_synthetic(const config::job_config& cfg);

}  // namespace msomni::rank_worker
