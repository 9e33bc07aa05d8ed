// progress_core (see progress_core.hpp).
#include "progress_core.hpp"

#include "training_health.hpp"

#include "core/json_escape.hpp"

#include <cmath>
#include <cstdio>
#include <utility>

namespace msomni::orchestrator {

namespace {

std::string json_number(double v) { return std::isfinite(v) ? number_or_nonfinite_name(v) : "null"; }

}  // namespace

std::optional<std::string> progress_core::on_step(const msg::step_record& r, time_point now, int64_t wall_ms) {
  if (r.step <= last_step_) return std::nullopt;
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
  std::string bad_json, bad_text;
  for (const auto& b : r.bad_samples) {
    bad += b.count;
    bad_by_reason_[b.reason] += b.count;
    bad_json += (bad_json.empty() ? "\"" : ",\"") + json_escape(b.reason) + "\":" + std::to_string(b.count);
    bad_text += " " + b.reason + "=" + std::to_string(b.count);
  }
  bad_total_ += bad;
  if (bad > 0 && bad_notes_ < bad_sample_notes_max) {
    ++bad_notes_;
    bad_note_ = "step " + std::to_string(r.step) + ": " + std::to_string(bad) + " bad samples skipped (" + bad_text.substr(1) +
                "); " + std::to_string(bad_total_) + " so far (" + bad_samples_summary().substr(bad_samples_summary().find(':') + 2) + ")" +
                (bad_notes_ == bad_sample_notes_max ? "; later steps count them in metrics.jsonl only" : "");
  }
  char line[384];
  std::snprintf(line, sizeof line,
                "{\"step\":%llu,\"loss\":%s,\"world_size\":%u,\"step_time_ms\":%.3f,\"tokens_per_s\":%.1f,"
                "\"data_wait_ms\":%.3f,\"checkpoint_ms\":%.3f,\"downgraded_samples\":%llu,\"time_ms\":%lld}",
                static_cast<unsigned long long>(r.step), json_number(r.loss).c_str(), r.world_size, r.step_time_ns / 1e6,
                r.tokens_per_s, r.data_wait_ns / 1e6, r.checkpoint_ns / 1e6, static_cast<unsigned long long>(r.downgraded_samples),
                static_cast<long long>(wall_ms));
  std::string out(line);
  out.insert(out.size() - 1, ",\"bad_samples\":{" + bad_json + "},\"grad_norm\":" + json_number(r.grad_norm));
  // JSON has no NaN or infinity: such a value is null, and "nonfinite" names what it was.
  std::string nonfinite;
  for (const auto& [name, v] : {std::pair{"loss", r.loss}, std::pair{"grad_norm", r.grad_norm}})
    if (!std::isfinite(v))
      nonfinite += std::string(nonfinite.empty() ? "" : ",") + "\"" + name + "\":\"" + number_or_nonfinite_name(v) + "\"";
  if (!nonfinite.empty()) out.insert(out.size() - 1, ",\"nonfinite\":{" + nonfinite + "}");
  if (r.optimizer_skipped) out.insert(out.size() - 1, ",\"optimizer_skipped\":true");
  return out;
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

}  // namespace msomni::orchestrator

namespace msomni::orchestrator {

std::string progress_core::bad_samples_summary() const {
  std::string s = "bad samples " + std::to_string(bad_total_);
  if (bad_total_ == 0) return s;
  s += ":";
  for (const auto& [reason, n] : bad_by_reason_) s += " " + reason + "=" + std::to_string(n);
  return s;
}

std::string progress_core::bad_samples_json() const {
  std::string j = "{";
  for (const auto& [reason, n] : bad_by_reason_) j += (j.size() > 1 ? ",\"" : "\"") + json_escape(reason) + "\":" + std::to_string(n);
  return j + "}";
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
