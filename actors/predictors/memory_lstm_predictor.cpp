// Online training and forecasting of the LSTM + attention memory predictor.
#include "memory_lstm_predictor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace msomni::predict {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;
constexpr double min_scale_bytes = 1 << 20;  // a flat trace still gets a usable target scale

}  // namespace

lstm_attention_predictor::lstm_attention_predictor(lstm_predictor_settings s)
    : s_(s), ridge_(s.window), rng_(s.seed * 0x9e3779b97f4a7c15ULL + 1) {
  if (s_.window < 2 || s_.horizon == 0 || s_.pca_dims == 0 || s_.hidden == 0 || s_.bptt_steps == 0 ||
      s_.refit_every == 0 || s_.row_batches_max == 0)
    throw std::invalid_argument("lstm predictor: window >= 2 and positive horizon, pca_dims, hidden, "
                                "bptt_steps, refit_every, row_batches_max");
  s_.warmup = std::clamp<size_t>(s_.warmup, 2, s_.window);
}

std::string lstm_attention_predictor::name() const {
  return s_.target == lstm_target::residual ? "lstm_attention" : "lstm_attention_peak";
}

std::vector<double> lstm_attention_predictor::raw_row(const memory_sample& s,
                                                      std::span<const batch_features> upcoming) const {
  std::vector<double> r;
  r.reserve(batch_feature_count * (row_batches() + 1) + 3);
  const auto own = batch_feature_vector(s.batch);
  r.insert(r.end(), own.begin(), own.end());
  r.push_back(static_cast<double>(s.peak_bytes) / gib);
  r.push_back(static_cast<double>(s.in_use_bytes) / gib);
  r.resize(r.size() + batch_feature_count * row_batches() + 1);
  set_upcoming(r, upcoming);
  return r;
}

void lstm_attention_predictor::set_upcoming(std::vector<double>& row, std::span<const batch_features> upcoming) const {
  auto at = row.begin() + static_cast<std::ptrdiff_t>(batch_feature_count + 2);
  const size_t n = row_batches();
  for (size_t k = 0; k < n; ++k) {
    if (k < upcoming.size()) {
      const auto f = batch_feature_vector(upcoming[k]);
      at = std::copy(f.begin(), f.end(), at);
    } else {
      at = std::fill_n(at, batch_feature_count, 0.0);
    }
  }
  *at = static_cast<double>(std::min(upcoming.size(), n)) / static_cast<double>(n);
}

uint64_t lstm_attention_predictor::next_random() {
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double lstm_attention_predictor::base(size_t end, size_t k) const {
  if (s_.target == lstm_target::peak) return y_mean_;
  const size_t at = end + k;
  if (k <= window_[end].known_ahead && at < window_.size()) return ridge_.estimate(window_[at].batch);
  return ridge_.unknown_batch_estimate();
}

void lstm_attention_predictor::refit() {
  const size_t n = window_.size(), d = window_.front().raw.size();
  std::vector<double> rows;
  rows.reserve(n * d);
  double mean = 0, var = 0;
  for (const auto& e : window_) {
    rows.insert(rows.end(), e.raw.begin(), e.raw.end());
    mean += e.peak;
  }
  mean /= static_cast<double>(n);
  for (const auto& e : window_) var += (e.peak - mean) * (e.peak - mean);
  const double scale = std::max(min_scale_bytes, std::sqrt(var / static_cast<double>(n)));
  pca_basis next = pca_fit(rows, d, s_.pca_dims);
  if (!net_) {
    net_ = std::make_unique<lstm_attention_net>(next.dims_out, s_.hidden, s_.horizon + 1, s_.seed);
  } else {
    // The same input row keeps giving the same gates in the new basis.
    const auto t = pca_transfer_between(pca_, next);
    const size_t k = next.dims_out, rows_w = 4 * s_.hidden;
    auto w = net_->input_weights();
    auto bias = net_->lstm_bias();
    std::vector<double> row(k);
    for (size_t r = 0; r < rows_w; ++r) {
      double add = 0;
      for (size_t b = 0; b < k; ++b) {
        double v = 0;
        for (size_t a = 0; a < k; ++a) v += w[r * k + a] * t.m[a * k + b];
        row[b] = v;
      }
      for (size_t a = 0; a < k; ++a) add += w[r * k + a] * t.shift[a];
      std::copy(row.begin(), row.end(), w.begin() + static_cast<std::ptrdiff_t>(r * k));
      bias[r] += add;
    }
    // Keep the same bytes for the same output: y' = (scale y + mean - mean') / scale'.
    const double ratio = y_scale_ / scale;
    for (auto& v : net_->output_weights()) v *= ratio;
    const double mean_shift = s_.target == lstm_target::peak ? (y_mean_ - mean) / scale : 0.0;
    for (auto& v : net_->output_bias()) v = v * ratio + mean_shift;
  }
  pca_ = std::move(next);
  y_mean_ = mean;
  y_scale_ = scale;
  for (auto& e : window_) {
    e.z.resize(pca_.dims_out);
    pca_.project(e.raw, e.z);
  }
  since_refit_ = 0;
}

double lstm_attention_predictor::train_example(size_t end, std::vector<double>& grad) const {
  const size_t k_in = pca_.dims_out;
  const size_t first = end + 1 >= s_.bptt_steps ? end + 1 - s_.bptt_steps : 0;
  std::vector<double> xs;
  xs.reserve((end + 1 - first) * k_in);
  for (size_t t = first; t <= end; ++t) xs.insert(xs.end(), window_[t].z.begin(), window_[t].z.end());
  // Outputs 0..horizon-1: each step ahead; output horizon: the max over the horizon, known
  // only once the whole horizon after `end` is in the window.
  const size_t h = s_.horizon;
  std::vector<double> targets(h + 1, 0.0);
  std::vector<bool> mask(h + 1, false);
  double peak_max = 0, base_max = 0;
  for (size_t k = 1; k <= h; ++k) {
    if (end + k >= window_.size()) break;
    const double b = base(end, k);
    targets[k - 1] = (window_[end + k].peak - b) / y_scale_;
    mask[k - 1] = true;
    peak_max = k == 1 ? window_[end + k].peak : std::max(peak_max, window_[end + k].peak);
    base_max = k == 1 ? b : std::max(base_max, b);
  }
  if (end + h < window_.size()) {
    targets[h] = (peak_max - base_max) / y_scale_;
    mask[h] = true;
  }
  return net_->loss_and_gradient(xs, targets, mask, grad);
}

void lstm_attention_predictor::observe(const memory_sample& s) {
  ridge_.observe(s);
  entry e;
  e.raw = raw_row(s, s.upcoming);
  e.peak = static_cast<double>(s.peak_bytes);
  e.batch = s.batch;
  e.known_ahead = std::min(s.upcoming.size(), s_.horizon);
  if (pca_.fitted()) {
    e.z.resize(pca_.dims_out);
    pca_.project(e.raw, e.z);
  }
  window_.push_back(std::move(e));
  if (window_.size() > s_.window) window_.pop_front();
  ++since_refit_;
  if (window_.size() >= s_.warmup && (!net_ || since_refit_ >= s_.refit_every)) refit();
  if (!net_ || window_.size() < 2) return;
  std::vector<double> grad(net_->parameters().size());
  const size_t newest_end = window_.size() - 2;  // the newest window with a known next step
  double loss = 0;
  for (size_t u = 0; u < s_.updates_per_step; ++u) {
    std::fill(grad.begin(), grad.end(), 0.0);
    for (size_t x = 0; x < s_.examples_per_update; ++x) {
      const size_t end = x == 0 ? newest_end : static_cast<size_t>(next_random() % (newest_end + 1));
      loss += train_example(end, grad);
    }
    for (auto& g : grad) g /= static_cast<double>(s_.examples_per_update);
    net_->adam_step(grad, s_.adam);
  }
  last_loss_ = loss / static_cast<double>(s_.updates_per_step * s_.examples_per_update);
}

memory_forecast lstm_attention_predictor::forecast(size_t horizon, std::span<const batch_features> upcoming) const {
  if (!net_) return ridge_.forecast(horizon, upcoming);
  const size_t k_in = pca_.dims_out;
  const size_t n = window_.size();
  const size_t first = n >= s_.bptt_steps ? n - s_.bptt_steps : 0;
  std::vector<double> xs;
  xs.reserve((n - first) * k_in);
  for (size_t t = first; t + 1 < n; ++t) xs.insert(xs.end(), window_[t].z.begin(), window_[t].z.end());
  // The newest row with the pipeline's batches as the caller knows them now.
  std::vector<double> raw = window_.back().raw;
  set_upcoming(raw, upcoming);
  std::vector<double> z(k_in);
  pca_.project(raw, z);
  xs.insert(xs.end(), z.begin(), z.end());
  const auto y = net_->forward(xs);
  // A diverged network must not turn into a reservation: the ridge answers instead.
  for (double v : y)
    if (!std::isfinite(v)) return ridge_.forecast(horizon, upcoming);
  std::vector<double> out(horizon);
  double base_max = 0;
  for (size_t k = 0; k < horizon; ++k) {
    const size_t o = std::min(k, s_.horizon - 1);
    double b = y_mean_;
    if (s_.target == lstm_target::residual)
      b = k < upcoming.size() ? ridge_.estimate(upcoming[k]) : ridge_.unknown_batch_estimate();
    base_max = k == 0 ? b : std::max(base_max, b);
    out[k] = std::max(0.0, b + y_scale_ * y[o]);
  }
  auto f = finish_forecast(std::move(out));
  // The max head is trained on the horizon's max itself: the largest of a step's expected
  // values falls short of the expected largest when the steps are uncertain.
  if (horizon == s_.horizon) f.max_bytes = std::max(f.max_bytes, base_max + y_scale_ * y[s_.horizon]);
  return f;
}

}  // namespace msomni::predict
