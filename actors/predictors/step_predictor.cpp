// Step-time predictor core: ring buffer statistics and idle-window forecasts.
#include "step_predictor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace msomni::predict {

double idle_share(const step_sample& s) {
  if (s.step_s <= 0) return 0;
  double waits = std::clamp(s.data_wait_s + s.checkpoint_s, 0.0, s.step_s);
  double compute = s.step_s - waits;
  double bubble = std::clamp(s.bubble_share, 0.0, 1.0) * compute;
  return std::clamp((waits + bubble) / s.step_s, 0.0, 1.0);
}

step_ring::step_ring(size_t capacity) : buf_(std::max<size_t>(capacity, 1)) {}

void step_ring::push(const step_sample& s) {
  buf_[head_] = s;
  head_ = (head_ + 1) % buf_.size();
  size_ = std::min(size_ + 1, buf_.size());
  ++pushed_;
}

const step_sample& step_ring::at(size_t i) const {
  if (i >= size_) throw std::out_of_range("step_ring::at");
  size_t oldest = (head_ + buf_.size() - size_) % buf_.size();
  return buf_[(oldest + i) % buf_.size()];
}

step_predictor::step_predictor(predictor_params p) : params_(p) {}

bool step_predictor::observe(const std::string& job, const step_sample& s) {
  auto it = rings_.find(job);
  if (it == rings_.end()) {
    if (rings_.size() >= params_.max_jobs) return false;
    it = rings_.emplace(job, step_ring(params_.window_steps)).first;
  }
  it->second.push(s);
  return true;
}

void step_predictor::forget(const std::string& job) { rings_.erase(job); }

step_stats step_predictor::stats(const std::string& job) const {
  step_stats st;
  auto it = rings_.find(job);
  if (it == rings_.end() || it->second.size() == 0) return st;
  const step_ring& r = it->second;
  st.samples = r.size();
  // Ordinary steps describe the rhythm; steps with a checkpoint/evaluation phase are
  // forecast separately as idle windows (they only add idle time), so they stay out of the
  // mean/std -- otherwise one 5-minute checkpoint would look like wild step-time noise.
  double sum = 0, sum2 = 0, isum = 0, isum2 = 0, ck_sum = 0, n = 0;
  size_t ck_count = 0, first_ck = 0, last_ck = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const step_sample& s = r.at(i);
    if (s.checkpoint_s > 0) {
      if (ck_count == 0) first_ck = i;
      last_ck = i;
      ++ck_count;
      ck_sum += s.checkpoint_s;
      st.checkpoint_min_s = ck_count == 1 ? s.checkpoint_s : std::min(st.checkpoint_min_s, s.checkpoint_s);
      continue;
    }
    double idle = idle_share(s);
    sum += s.step_s;
    sum2 += s.step_s * s.step_s;
    isum += idle;
    isum2 += idle * idle;
    n += 1;
  }
  if (n == 0) {  // only checkpoint steps so far: use them rather than nothing
    for (size_t i = 0; i < r.size(); ++i) {
      double idle = idle_share(r.at(i));
      sum += r.at(i).step_s;
      sum2 += r.at(i).step_s * r.at(i).step_s;
      isum += idle;
      isum2 += idle * idle;
      n += 1;
    }
  }
  st.step_mean_s = sum / n;
  st.step_std_s = std::sqrt(std::max(0.0, sum2 / n - st.step_mean_s * st.step_mean_s));
  st.idle_mean = isum / n;
  st.idle_std = std::sqrt(std::max(0.0, isum2 / n - st.idle_mean * st.idle_mean));
  st.last_idle = idle_share(r.at(r.size() - 1));
  if (ck_count > 0) st.checkpoint_mean_s = ck_sum / static_cast<double>(ck_count);
  // A period needs two checkpoints inside the window; with one we only know it is rarer
  // than the window, which is what an absent period (0) tells the caller too.
  if (ck_count >= 2)
    st.checkpoint_every_steps =
        static_cast<double>(last_ck - first_ck) / static_cast<double>(ck_count - 1);
  return st;
}

idle_forecast step_predictor::forecast(const std::string& job, double horizon_s, double since_last_s) const {
  idle_forecast f;
  f.horizon_s = horizon_s;
  step_stats st = stats(job);
  if (st.samples == 0 || st.step_mean_s <= 0) return f;  // nothing known: lend nothing
  // Steps in the horizon average their idle shares, so the horizon's spread shrinks with
  // sqrt(steps) -- assuming steps are independent, which checkpoint phases are not; they
  // are forecast as windows below. The mean itself comes from the samples in the ring, so
  // its standard error (std / sqrt(samples)) adds to the spread: a short history lends less.
  double steps = std::max(1.0, horizon_s / st.step_mean_s);
  f.idle_mean = st.idle_mean;
  f.idle_std = st.idle_std * std::sqrt(1.0 / steps + 1.0 / static_cast<double>(st.samples));
  f.lendable_share = std::max(0.0, f.idle_mean - params_.safety_factor * f.idle_std);
  f.last_idle = st.last_idle;
  double fill = static_cast<double>(st.samples) / static_cast<double>(std::max<size_t>(params_.warmup_steps, 1));
  double cv = st.step_std_s / st.step_mean_s;
  f.confidence = std::clamp(std::min(fill, 1.0) * (1.0 - cv), 0.0, 1.0);
  f.rhythm_idle = f.idle_mean;
  if (st.checkpoint_every_steps > 0) {
    const double phase = st.checkpoint_mean_s / (st.checkpoint_every_steps * st.step_mean_s + st.checkpoint_mean_s);
    f.rhythm_idle = phase + (1 - phase) * f.idle_mean;
  }
  if (st.checkpoint_every_steps <= 0 || horizon_s <= 0) return f;
  // Steps since the newest checkpoint step decide where the next one lands: after
  // next_in_steps ordinary step lengths (its phase closes its own step).
  const step_ring& r = rings_.at(job);
  size_t since = 0;
  for (size_t i = r.size(); i-- > 0;) {
    if (r.at(i).checkpoint_s > 0) break;
    ++since;
  }
  double next_in_steps = std::max(1.0, st.checkpoint_every_steps - static_cast<double>(since));
  double covered = 0;
  for (double n = next_in_steps; f.windows.size() < params_.max_windows; n += st.checkpoint_every_steps) {
    double at = n * st.step_mean_s - since_last_s;
    if (at >= horizon_s) break;
    if (at + st.checkpoint_mean_s > 0) f.windows.push_back({at, st.checkpoint_mean_s});
    double margin = params_.safety_factor * st.step_std_s * std::sqrt(n);
    double lo = std::max(at + margin, 0.0), hi = std::min(at + st.checkpoint_min_s - margin, horizon_s);
    if (hi > lo) covered += hi - lo;
  }
  f.phase_share = std::clamp(covered / horizon_s, 0.0, 1.0);
  return f;
}

}  // namespace msomni::predict
