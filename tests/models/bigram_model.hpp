// The byte bigram MLP both test plugins train ("bigram-mlp" in tree, the installed-package
// example out of tree): a next-token predictor (embedding -> tanh -> softmax) that ignores
// patches. It uses only the embedding API headers, no msomni library.
#pragma once

#include "model/plugin_abi.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace msomni::test_models {

using namespace msomni::model;

class bigram_mlp : public trainable_model {
 public:
  // `hidden` is the embedding width, `init_std` the spread of the initial weights, `name`
  // what the plugin registers it as.
  bigram_mlp(const model_context& c, int64_t hidden, float init_std, std::string name = "bigram-mlp")
      : name_(std::move(name)), vocab_(c.config.vocab_size), hidden_(hidden) {
    params_info_ = {{"embed", {vocab_, hidden_}, 0, vocab_ * hidden_, true},
                    {"out.w", {hidden_, vocab_}, vocab_ * hidden_, hidden_ * vocab_, true},
                    {"out.b", {vocab_}, 2 * vocab_ * hidden_, vocab_, false}};
    const size_t n = static_cast<size_t>(2 * vocab_ * hidden_ + vocab_);
    p_.assign(n, 0.0f);
    g_.assign(n, 0.0f);
    m_.assign(n, 0.0f);
    v_.assign(n, 0.0f);
    std::mt19937_64 gen(c.seed);  // std::mt19937_64 is specified bit-exactly by the standard
    std::normal_distribution<float> normal(0.0f, init_std);
    for (size_t i = 0; i < static_cast<size_t>(2 * vocab_ * hidden_); ++i) p_[i] = normal(gen);
  }

  std::string name() const override { return name_; }
  storage_kind storage() const override { return storage_kind::host; }
  const std::vector<parameter_info>& parameters() const override { return params_info_; }
  std::span<float> parameter_data() override { return p_; }
  std::span<float> gradient_data() override { return g_; }
  void copy_to_host(buffer_role w, std::span<float> out) const override {
    const auto& src = w == buffer_role::parameters ? p_ : g_;
    if (out.size() != src.size()) throw std::invalid_argument("bigram-mlp: size mismatch");
    std::memcpy(out.data(), src.data(), src.size() * sizeof(float));
  }
  void copy_from_host(buffer_role w, std::span<const float> in) override {
    auto& dst = w == buffer_role::parameters ? p_ : g_;
    if (in.size() != dst.size()) throw std::invalid_argument("bigram-mlp: size mismatch");
    std::memcpy(dst.data(), in.data(), dst.size() * sizeof(float));
  }
  void zero_gradients() override { std::fill(g_.begin(), g_.end(), 0.0f); }

  loss_report forward_backward(const micro_batch& mb, float grad_scale) override {
    return run(mb, grad_scale, true);
  }
  loss_report evaluate(const micro_batch& mb) override { return run(mb, 0.0f, false); }

  optimizer_report optimizer_step(const optimizer_settings& s) override {
    optimizer_report r;
    double ss = 0;
    for (float g : g_) ss += double(g) * g;
    r.grad_norm = std::sqrt(ss) * s.gradient_scale;
    if (!std::isfinite(r.grad_norm)) return r.skipped = true, r.step = step_, r;
    r.clip_coefficient = (s.grad_clip > 0 && r.grad_norm > s.grad_clip) ? s.grad_clip / r.grad_norm : 1.0;
    r.step = ++step_;
    const double bc1 = 1 - std::pow(s.beta1, double(step_)), bc2 = 1 - std::pow(s.beta2, double(step_));
    for (const auto& info : params_info_)
      for (int64_t i = info.offset; i < info.offset + info.size; ++i) {
        const double g = g_[i] * s.gradient_scale * r.clip_coefficient;
        m_[i] = float(s.beta1 * m_[i] + (1 - s.beta1) * g);
        v_[i] = float(s.beta2 * v_[i] + (1 - s.beta2) * g * g);
        const double decay = info.weight_decay ? s.weight_decay : 0.0;
        p_[i] -= float(s.lr * (decay * p_[i] + (m_[i] / bc1) / (std::sqrt(v_[i] / bc2) + s.eps)));
      }
    return r;
  }

  model_state save_state() const override {
    model_state st;
    for (const auto& info : params_info_) {
      auto slice = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + info.offset, v.begin() + info.offset + info.size);
      };
      st.tensors.push_back({"param/" + info.name, info.shape, slice(p_)});
      st.tensors.push_back({"adam_m/" + info.name, info.shape, slice(m_)});
      st.tensors.push_back({"adam_v/" + info.name, info.shape, slice(v_)});
    }
    st.put_int64("optimizer/step", step_);
    return st;
  }
  void load_state(const model_state& st) override {
    int64_t step = 0;
    if (!st.get_int64("optimizer/step", step))
      throw std::invalid_argument("bigram-mlp load_state: missing 'optimizer/step'");
    auto p = p_, m = m_, v = v_;
    for (const auto& info : params_info_) {
      const std::pair<const char*, std::vector<float>*> groups[] = {{"param/", &p}, {"adam_m/", &m}, {"adam_v/", &v}};
      for (auto [prefix, dst] : groups) {
        const state_tensor* t = st.find_tensor(prefix + info.name);
        if (!t || int64_t(t->values.size()) != info.size)
          throw std::invalid_argument("bigram-mlp load_state: missing or mis-sized '" +
                                      std::string(prefix) + info.name + "'");
        std::copy(t->values.begin(), t->values.end(), dst->begin() + info.offset);
      }
    }
    p_ = std::move(p), m_ = std::move(m), v_ = std::move(v), step_ = step;
  }
  memory_estimate estimate_memory(int64_t batch, int64_t seq_len) const override {
    const int64_t bytes = int64_t(sizeof(float) * p_.size());
    return {bytes, bytes, 2 * bytes, int64_t(sizeof(float)) * (hidden_ + vocab_) * 2};
  }

 protected:
  loss_report run(const micro_batch& mb, float grad_scale, bool backward) {
    mb.validate();
    loss_report r{0.0, mb.target_tokens(), mb.input_tokens()};
    if (r.target_tokens == 0) return r;
    std::vector<float> h(hidden_), z(vocab_), dh(hidden_);
    const float* E = p_.data();
    const float* W = E + vocab_ * hidden_;
    const float* bias = W + hidden_ * vocab_;
    float* dE = g_.data();
    float* dW = dE + vocab_ * hidden_;
    float* db = dW + hidden_ * vocab_;
    const float scale = grad_scale / float(r.target_tokens);
    double total = 0;
    for (int64_t b = 0; b < mb.batch; ++b)
      for (int64_t t = 0; t + 1 < mb.text_len; ++t) {
        if (!mb.loss_mask[b * mb.text_len + t + 1]) continue;
        const int32_t prev = mb.tokens[b * mb.text_len + t], next = mb.tokens[b * mb.text_len + t + 1];
        if (prev < 0 || prev >= vocab_ || next < 0 || next >= vocab_)
          throw std::invalid_argument("bigram-mlp: token outside the vocabulary");
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

  std::string name_;
  int64_t vocab_, hidden_;
  std::vector<parameter_info> params_info_;
  std::vector<float> p_, g_, m_, v_;
  int64_t step_ = 0;
};

}  // namespace msomni::test_models
