// A byte bigram language model on msomni's embedding API: each text byte predicts the next
// through embedding -> tanh -> linear -> softmax; patches are ignored. Everything but the
// model itself comes from model/host_model.hpp: the flat parameter layout, AdamW with
// global-norm clipping and the non-finite skip, and the checkpoint state.
#pragma once

#include "model/host_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace msomni::examples {

class byte_bigram : public model::host_model {
 public:
  // `hidden`: the embedding width; `init_std`: the spread of the initial weights; `name`:
  // what the plugin registers it as.
  byte_bigram(const model::model_context& c, int64_t hidden, float init_std, std::string name)
      : host_model(c.cpu_threads), name_(std::move(name)), vocab_(c.config.vocab_size), hidden_(hidden) {
    if (hidden_ <= 0) throw std::invalid_argument(name_ + ": the embedding width must be positive");
    embed_ = declare("embed", {vocab_, hidden_}, true);
    out_w_ = declare("out.w", {hidden_, vocab_}, true);
    out_b_ = declare("out.b", {vocab_}, false);  // a bias: no weight decay
    // From the job seed only, so every replica starts identical.
    std::mt19937_64 gen(c.seed);
    std::normal_distribution<float> normal(0.0f, init_std);
    float* p = parameter_data().data();
    for (int64_t i = embed_; i < out_b_; ++i) p[i] = normal(gen);  // embed and out.w; out.b stays 0
  }

  std::string name() const override { return name_; }

  model::loss_report forward_backward(const model::micro_batch& mb, float grad_scale) override {
    return run(mb, grad_scale, true);
  }
  model::loss_report evaluate(const model::micro_batch& mb) override { return run(mb, 0.0f, false); }

  model::memory_estimate estimate_memory(int64_t /*micro_batch*/, int64_t /*seq_len*/) const override {
    auto e = state_memory();  // parameters, gradients, both AdamW moments
    e.activation_bytes = static_cast<int64_t>(sizeof(float)) * (hidden_ + vocab_) * 2;  // one position at a time
    return e;
  }

 protected:
  // Mean cross-entropy over the batch's target tokens; with `backward`, gradients +=
  // grad_scale * its gradient.
  model::loss_report run(const model::micro_batch& mb, float grad_scale, bool backward) {
    mb.validate();
    model::loss_report r{0.0, mb.target_tokens(), mb.input_tokens()};
    if (r.target_tokens == 0) return r;
    std::vector<float> h(static_cast<size_t>(hidden_)), z(static_cast<size_t>(vocab_)), dh(static_cast<size_t>(hidden_));
    const float* E = parameter_data().data() + embed_;
    const float* W = parameter_data().data() + out_w_;
    const float* bias = parameter_data().data() + out_b_;
    float* dE = gradient_data().data() + embed_;
    float* dW = gradient_data().data() + out_w_;
    float* db = gradient_data().data() + out_b_;
    const float scale = grad_scale / static_cast<float>(r.target_tokens);
    double total = 0;
    for (int64_t b = 0; b < mb.batch; ++b)
      for (int64_t t = 0; t + 1 < mb.text_len; ++t) {
        const auto at = static_cast<size_t>(b * mb.text_len + t);
        if (!mb.loss_mask[at + 1]) continue;  // token t+1 is not a target
        const int32_t prev = mb.tokens[at], next = mb.tokens[at + 1];
        if (prev < 0 || prev >= vocab_ || next < 0 || next >= vocab_)
          throw std::invalid_argument(name_ + ": token outside the vocabulary");
        for (int64_t k = 0; k < hidden_; ++k) h[k] = std::tanh(E[prev * hidden_ + k]);
        float mx = -INFINITY;
        for (int64_t c = 0; c < vocab_; ++c) {
          float s = bias[c];
          for (int64_t k = 0; k < hidden_; ++k) s += h[k] * W[k * vocab_ + c];
          z[c] = s;
          mx = std::max(mx, s);
        }
        double sum = 0;
        for (int64_t c = 0; c < vocab_; ++c) sum += std::exp(double(z[c] - mx));
        const double log_sum = std::log(sum) + mx;
        total += log_sum - z[next];
        if (!backward) continue;
        std::fill(dh.begin(), dh.end(), 0.0f);
        for (int64_t c = 0; c < vocab_; ++c) {
          const float dz = scale * (float(std::exp(z[c] - log_sum)) - (c == next ? 1.0f : 0.0f));
          db[c] += dz;
          for (int64_t k = 0; k < hidden_; ++k) {
            dW[k * vocab_ + c] += h[k] * dz;
            dh[k] += W[k * vocab_ + c] * dz;
          }
        }
        for (int64_t k = 0; k < hidden_; ++k) dE[prev * hidden_ + k] += dh[k] * (1 - h[k] * h[k]);
      }
    r.loss = total / double(r.target_tokens);
    return r;
  }

 private:
  std::string name_;
  int64_t vocab_, hidden_;
  int64_t embed_ = 0, out_w_ = 0, out_b_ = 0;  // offsets into the flat buffers
};

}  // namespace msomni::examples
