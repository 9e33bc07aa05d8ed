// The learned memory predictor: an LSTM with attention over the rank's recent steps,
// trained online on the rank's own samples.
//
// Each step becomes one input row: the batch it ran, its peak and end-of-step bytes, and the
// features of the batches the pipeline held at that step (up to `horizon`, at most
// `row_batches_max`, zeros past the known ones) with how many were known. The rows are compressed by PCA to `pca_dims`
// (refitted every `refit_every` steps; the network's input weights are carried over to the
// new basis so a refit does not throw away what was learned). The network reads the last
// `bptt_steps` rows and gives one value per step ahead and one for the largest over the
// horizon: in `residual` mode the correction to the ridge predictor's feature estimate of
// that step's batch (of the largest estimate, for the max), in `peak` mode the peak itself
// (both scaled by the window's peak spread). The forecast's max is the larger of the max
// output and the steps' largest. Each observed step runs
// `updates_per_step` Adam steps on `examples_per_update` windows ending inside the kept
// window (the newest one always among them), so the cost per step is bounded.
#pragma once

#include "memory_lstm.hpp"
#include "memory_pca.hpp"
#include "memory_predictor.hpp"
#include "memory_ridge.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>

namespace msomni::predict {

enum class lstm_target { residual, peak };

struct lstm_predictor_settings {
  size_t window = 200;             // samples kept ([memory] sequence_length)
  size_t horizon = 10;             // steps ahead the network outputs ([memory] horizon_steps)
  size_t pca_dims = 16;            // [memory] pca_dims
  size_t hidden = 16;
  size_t bptt_steps = 32;          // rows the network reads and backpropagates through
  size_t updates_per_step = 2;
  size_t examples_per_update = 4;
  size_t refit_every = 50;         // steps between PCA refits
  size_t warmup = 24;              // samples before the first fit; until then the ridge answers
  size_t row_batches_max = 16;     // upcoming batches an input row describes (bounds the row)
  lstm_target target = lstm_target::residual;
  adam_settings adam;
  uint64_t seed = 1;
};

class lstm_attention_predictor final : public memory_predictor {
 public:
  explicit lstm_attention_predictor(lstm_predictor_settings s);
  std::string name() const override;
  void observe(const memory_sample& s) override;
  memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const override;

  bool trained() const { return net_ != nullptr; }
  double last_loss() const { return last_loss_; }  // mean training loss of the last observed step
  const pca_basis& pca() const { return pca_; }

 private:
  struct entry {
    std::vector<double> raw, z;  // the input row and its projection
    double peak = 0;
    batch_features batch;
    size_t known_ahead = 0;      // upcoming batches the pipeline held at this step
  };
  std::vector<double> raw_row(const memory_sample& s, std::span<const batch_features> upcoming) const;
  void set_upcoming(std::vector<double>& row, std::span<const batch_features> upcoming) const;
  size_t row_batches() const { return std::min(s_.horizon, s_.row_batches_max); }
  void refit();
  double base(size_t end, size_t k) const;  // the ridge estimate for step end + k as seen at end
  double train_example(size_t end, std::vector<double>& grad) const;
  uint64_t next_random();

  lstm_predictor_settings s_;
  std::deque<entry> window_;
  ridge_predictor ridge_;
  pca_basis pca_;
  std::unique_ptr<lstm_attention_net> net_;
  double y_mean_ = 0, y_scale_ = 1;
  size_t since_refit_ = 0;
  uint64_t rng_;
  double last_loss_ = 0;
};

}  // namespace msomni::predict
