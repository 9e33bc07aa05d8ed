// progress_core (see progress_core.hpp).
#include "progress_core.hpp"

#include <cstdio>

namespace msomni::orchestrator {

std::optional<metrics_record> progress_core::on_step(const msg::step_record& r, time_point now, int64_t wall_ms) {
  if (r.step <= last_step_) return std::nullopt;
  if ((continues_ || first_at_) && !rolled_back_ && r.step > last_step_ + 1) gap_ = step_gap{last_step_ + 1, r.step - 1};
  if (!first_at_ && !continues_ && expected_after_ && r.step > *expected_after_ + 1)
    gap_ = step_gap{*expected_after_ + 1, r.step - 1, true};
  continues_ = rolled_back_ = false;
  if (!first_at_) {
    first_at_ = now;
    first_step_ = r.step;
    first_loss_ = r.loss;
  }
  last_step_ = r.step;
  last_loss_ = r.loss;
  tokens_per_s_ = r.tokens_per_s;
  last_at_ = now;
  uint64_t bad = 0;
  std::string bad_text;
  for (const auto& b : r.bad_samples) {
    bad += b.count;
    bad_by_reason_[b.reason] += b.count;
    bad_text += " " + b.reason + "=" + std::to_string(b.count);
  }
  bad_total_ += bad;
  mismatched_ += r.mismatched_names;
  if (bad > 0 && bad_notes_ < bad_sample_notes_max) {
    ++bad_notes_;
    bad_note_ = "step " + std::to_string(r.step) + ": " + std::to_string(bad) + " bad samples skipped (" + bad_text.substr(1) +
                "); " + std::to_string(bad_total_) + " so far (" + bad_samples_summary().substr(bad_samples_summary().find(':') + 2) + ")" +
                (bad_notes_ == bad_sample_notes_max ? "; later steps count them in metrics.jsonl only" : "");
  }
  metrics_record m;
  m.step = r.step;
  m.loss = r.loss;
  m.world_size = r.world_size;
  m.step_time_ms = static_cast<double>(r.step_time_ns) / 1e6;
  m.tokens_per_s = r.tokens_per_s;
  m.data_wait_ms = static_cast<double>(r.data_wait_ns) / 1e6;
  m.checkpoint_ms = static_cast<double>(r.checkpoint_ns) / 1e6;
  m.downgraded_samples = r.downgraded_samples;
  m.time_ms = wall_ms;
  m.bad_samples = r.bad_samples;
  m.grad_norm = r.grad_norm;
  m.optimizer_skipped = r.optimizer_skipped;
  m.compute_ms_max = r.compute_ms_max;
  m.compute_ms_mean = r.compute_ms_mean;
  return m;
}

std::string progress_core::progress_line() const {
  char eta[32] = "--";
  if (first_at_ && last_step_ > first_step_) {
    const double per_step =
        std::chrono::duration<double>(last_at_ - *first_at_).count() / static_cast<double>(last_step_ - first_step_);
    const double left = per_step * static_cast<double>(total_ - std::min(total_, last_step_));
    std::snprintf(eta, sizeof eta, "%dm%02ds", static_cast<int>(left) / 60, static_cast<int>(left) % 60);
  }
  char line[160];
  std::snprintf(line, sizeof line, "step %llu/%llu  loss %.4f  %.0f tok/s  ETA %s",
                static_cast<unsigned long long>(last_step_), static_cast<unsigned long long>(total_), last_loss_,
                tokens_per_s_, eta);
  return line;
}

std::string progress_core::bad_samples_summary() const {
  std::string s = "bad samples " + std::to_string(bad_total_);
  if (bad_total_ == 0) return s;
  s += ":";
  for (const auto& [reason, n] : bad_by_reason_) s += " " + reason + "=" + std::to_string(n);
  return s;
}

std::string progress_core::summary() const {
  if (!first_at_) return "no step recorded";
  char line[200];
  std::snprintf(line, sizeof line, "%llu steps, %.1f s from the first recorded step, loss %.4f -> %.4f, %.0f tokens/s at the end",
                static_cast<unsigned long long>(last_step_),
                std::chrono::duration<double>(last_at_ - *first_at_).count(), first_loss_, last_loss_, tokens_per_s_);
  return line;
}

}  // namespace msomni::orchestrator
