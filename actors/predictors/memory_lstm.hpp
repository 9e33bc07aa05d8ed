// A small LSTM with dot-product attention over its states, trained by backpropagation
// through time with Adam: the network of the learned memory predictor.
//
//   x_1..x_T -> LSTM -> h_1..h_T;  q = Wq h_T;  a = softmax(h_t . q / sqrt(H));
//   c = sum_t a_t h_t;  y = Wo [h_T; c] + bo
//
// All parameters sit in one flat vector (so Adam and the gradient check see them alike).
// Deterministic: the initial weights come from the seed; no threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace msomni::predict {

struct adam_settings {
  double learning_rate = 3e-3;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double clip_norm = 1.0;  // the gradient's L2 norm is cut to this before the step
};

class lstm_attention_net {
 public:
  lstm_attention_net(size_t inputs, size_t hidden, size_t outputs, uint64_t seed);

  size_t inputs() const { return inputs_; }
  size_t hidden() const { return hidden_; }
  size_t outputs() const { return outputs_; }

  // xs: T x inputs, row-major (T >= 1). Returns `outputs` values.
  std::vector<double> forward(std::span<const double> xs) const;
  // 0.5 * mean over the masked outputs of (y - target)^2; adds its gradient into grad
  // (sized like parameters()). mask[k] = false leaves output k out.
  double loss_and_gradient(std::span<const double> xs, std::span<const double> targets,
                           const std::vector<bool>& mask, std::vector<double>& grad) const;
  // One Adam step along `grad` (already averaged over the examples).
  void adam_step(std::vector<double>& grad, const adam_settings& s);

  std::vector<double>& parameters() { return params_; }
  const std::vector<double>& parameters() const { return params_; }

  // Views into parameters(): the LSTM's input weights W (4H x inputs), its bias (4H), the
  // output weights Wo (outputs x 2H) and bias (outputs). The predictor rewrites them when
  // its input basis or target scale changes.
  std::span<double> input_weights() { return {params_.data() + w_, 4 * hidden_ * inputs_}; }
  std::span<double> lstm_bias() { return {params_.data() + b_, 4 * hidden_}; }
  std::span<double> output_weights() { return {params_.data() + wo_, outputs_ * 2 * hidden_}; }
  std::span<double> output_bias() { return {params_.data() + bo_, outputs_}; }

 private:
  struct trace;  // the forward pass's saved values
  void run(std::span<const double> xs, trace& tr) const;

  size_t inputs_, hidden_, outputs_;
  size_t w_, u_, b_, wq_, wo_, bo_;  // offsets into params_
  std::vector<double> params_, adam_m_, adam_v_;
  uint64_t adam_steps_ = 0;
};

}  // namespace msomni::predict
