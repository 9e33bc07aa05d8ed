// The training loop of one data-parallel rank, as a plain object the actor shell and the
// rank process drive: one call = one optimizer step (grad_accum micro-batches, a sum
// all-reduce of the flat gradient buffer, AdamW with gradient_scale = 1/world). Gradients
// on a GPU are all-reduced in place by the epoch's NCCL communicator when there is one. Time comes
// from an injected clock. Deterministic: same seed, data and world size -> same bits.
#pragma once

#include "batch_cost_model.hpp"
#include "batch_fit.hpp"
#include "batch_source.hpp"
#include "collectives/communicator.hpp"
#include "core/clock.hpp"
#include "messages/scheduling_messages.hpp"
#include "messages/training_messages.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msomni::rank_worker {

struct trainer_settings {
  int64_t grad_accum = 1;
  int64_t warmup_steps = 0;
  model::optimizer_settings optimizer;  // lr is the peak; gradient_scale is set per step
  int64_t patches_per_frame = 0;        // what a video cut to its keyframe keeps (batch_fit.hpp)
};

// What the trainer did to make one step fit the memory forecast for it (batch_fit.hpp).
struct step_fit {
  fit_target target;
  double allow_bytes = 0;            // the activation allowance it gave each part
  double cut_allow_bytes = 0;        // the allowance under the device, which decides a keyframe cut
  uint32_t micro_batches_split = 0;  // micro-batches run as parts
  uint32_t parts = 0;                // parts run in all (micro-batches that were not split count 1)
  uint32_t keyframe_cuts = 0;        // videos cut to their first frame
  bool fits = true;                  // false: some part was over the allowance even so
  std::string detail;                // the first changed micro-batch's plan, described
};

trainer_settings settings_from(const config::job_config& cfg);

class rank_trainer {
 public:
  rank_trainer(model::trainable_model& m, transport::communicator& comm, batch_source& data,
               const clock& clk, trainer_settings settings);

  // One optimizer step; the record's loss is the mean over all ranks' target tokens.
  // `announce` rides in the step's statistics all-reduce (rank 0 passes the newest
  // membership epoch it holds, the others 0), so after the step every member knows it
  // (last_announced()) and all switch at the same step boundary.
  // Throws transport::collective_error when a peer is lost mid-step.
  msg::step_record step(uint64_t announce = 0);
  uint64_t last_announced() const { return announced_; }

  // After an elastic change: the same model and data, a new membership.
  void rebind(transport::communicator& comm) { comm_ = &comm; }
  // The epoch's device communicator (NCCL), or null: gradients then go through host memory
  // on the ring. It must be of the ring's epoch and membership; rebind the ring first.
  void rebind_gradients(transport::communicator* device_comm) { gradient_comm_ = device_comm; }
  void rebind(batch_source& data) { data_ = &data; }
  // The global batch stays fixed across resizes: grad_accum follows the replica count.
  void set_grad_accum(int64_t grad_accum) { settings_.grad_accum = grad_accum; }
  int64_t grad_accum() const { return settings_.grad_accum; }

  // Makes every member's full state (model, optimizer, step, data position) equal to
  // `root`'s: how a rank that joins at a barrier receives the live state. Collective.
  void sync_state(transport::communicator& comm, int root);

  uint64_t steps_done() const { return step_; }
  // The last step's gradient all-reduce: its time (staging to and from the host included)
  // and the gradient bytes it summed.
  struct allreduce_cost {
    nanos time{0};
    uint64_t bytes = 0;
  };
  allreduce_cost last_allreduce() const { return last_allreduce_; }
  // This rank's own input tokens per second over the last step (the step record's
  // tokens_per_s is the whole job's).
  double own_tokens_per_s() const { return own_tokens_per_s_; }
  // This rank's forward and backward time in the last step (ms), and the batch cost model
  // calibrated on its micro-batches (its error is a metric).
  double own_compute_ms() const { return own_compute_ms_; }
  const batch_cost_model& cost_model() const { return cost_model_; }
  // False after a step whose loss or gradient was not finite (the optimizer skipped it): the
  // state then is no checkpoint to keep.
  bool last_step_finite() const { return last_step_finite_; }
  // The distinct bad samples this rank drew up to the last step (as its counts say) since the
  // last call, each with the draws since then (the rank sends them to the control process; each rank draws its own samples).
  std::vector<msg::bad_sample_seen> take_bad_samples_seen();
  // What the last step's micro-batches asked of memory together (memory_features.hpp).
  const msg::batch_features& last_step_batch() const { return last_batch_; }

  // Where the trainer learns, at the start of step N, the memory forecast it must fit (none:
  // the step runs as it is). Called on the training thread.
  using fit_source = std::function<std::optional<fit_target>(uint64_t step)>;
  void set_fit_source(fit_source source) { fit_source_ = std::move(source); }
  // What the last step did under its fit target; none when it had none.
  const std::optional<step_fit>& last_fit() const { return last_fit_; }

  // Everything needed to continue exactly: model state plus "trainer/step" and "data/position".
  model::model_state save_state() const;
  // Returns false when the state carries no data position, or one the data source cannot
  // read (an older format); the data source is then left as is.
  bool load_state(const model::model_state& s);

  // Checksum of the parameters (stable_hash over their bits) for bit-exact comparisons.
  uint64_t parameter_checksum() const;

 private:
  // What one step's micro-batches added up to on this rank.
  struct micro_batch_totals {
    double loss_sum = 0;  // sum over micro-batches of mean loss x target tokens
    double targets = 0, inputs = 0;
    nanos compute{0};  // this rank's forward and backward time
    nanos data_wait{0};
  };
  // The step's statistics, one all-reduce's worth, and where the per-rank compute slots begin.
  struct step_statistics {
    std::vector<float> values;
    size_t compute_from = 0;
  };
  // The fixed leading slots of step_statistics::values; bad-sample counts follow them.
  static constexpr size_t stat_loss = 0, stat_targets = 1, stat_inputs = 2, stat_announce = 3, stat_downgraded = 4,
                          stat_mismatched = 5, stat_bad_from = 6;

  double lr_at(uint64_t step) const;
  activation_bytes_fn activations() const;
  // Sets last_fit_ from the fit source's target for the coming step, if it names one.
  void take_fit_target();
  // Forward and backward over grad_accum micro-batches, gradients accumulating in the model.
  micro_batch_totals run_micro_batches(float scale);
  // The sum over ranks of the gradient buffer, wherever it lives; sets last_allreduce_.
  void all_reduce_gradients();
  // This rank's share of the step's statistics (not yet summed); advances the bad-sample
  // and mismatch counts to the data source's snapshot.
  step_statistics own_statistics(uint64_t announce, const micro_batch_totals& totals, uint64_t downgraded_before,
                                 const std::vector<msg::bad_sample_count>& bad_before);
  // The step's record from the summed statistics; sets own_tokens_per_s_ and own_compute_ms_.
  msg::step_record record_of(const step_statistics& stats, const model::optimizer_report& rep, nanos elapsed,
                             const micro_batch_totals& totals);
  // One micro-batch under the step's fit target: as it is, or as the parts batch_fit plans.
  void run_fitted(const model::micro_batch& batch, float scale,
                  const std::function<void(const model::micro_batch&, float)>& run);

  model::trainable_model& model_;
  transport::communicator* comm_;
  transport::communicator* gradient_comm_ = nullptr;  // device gradients in place (NCCL)
  batch_source* data_;
  const clock& clock_;
  trainer_settings settings_;
  uint64_t step_ = 0;
  uint64_t announced_ = 0;
  bool last_step_finite_ = true;
  allreduce_cost last_allreduce_;
  double own_tokens_per_s_ = 0;
  double own_compute_ms_ = 0;
  batch_cost_model cost_model_;
  uint64_t mismatched_before_ = 0;                  // the data source's count after the last step
  bad_sample_listing last_listing_;                 // taken with the last step's bad-sample counts
  std::vector<msg::bad_sample_count> bad_counted_;  // the data source's counts after the last step
  std::map<std::string, uint64_t> seen_reported_;  // draws already reported, by key (bounded by the source's listing)
  msg::batch_features last_batch_;
  std::vector<float> host_grads_;  // staging when the model keeps gradients on a GPU
  fit_source fit_source_;
  std::optional<step_fit> last_fit_;
};

}  // namespace msomni::rank_worker
