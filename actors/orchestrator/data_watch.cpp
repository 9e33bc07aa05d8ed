// data_watch (see data_watch.hpp).
#include "data_watch.hpp"

#include "number_text.hpp"

#include <algorithm>

namespace msomni::orchestrator {

namespace {
std::string ms_text(double ms) { return fixed(ms, 1) + " ms"; }
}  // namespace

data_note data_watch::end_note(const span& s) const {
  return {"video_downgrade_ended", "steps " + std::to_string(s.first) + ".." + std::to_string(s.last) + ": " +
                                       std::to_string(s.samples) + " video samples decoded keyframe-only; " +
                                       std::to_string(downgraded_total_) + " so far"};
}

std::vector<data_note> data_watch::on_step(const msg::step_record& r) {
  std::vector<data_note> out;
  if (r.downgraded_samples > 0) {
    downgraded_total_ += r.downgraded_samples;
    if (!span_) {
      span_ = span{r.step, r.step, 0};
      ++spans_;
      if (downgrade_notes_ < notes_max)
        out.push_back({"video_downgrade", "from step " + std::to_string(r.step) +
                                              ": videos are decoded keyframe-only while the tensor stage cannot keep up "
                                              "with training (io.downgrade_video); " +
                                              std::to_string(r.downgraded_samples) + " this step"});
    }
    span_->last = r.step;
    span_->samples += r.downgraded_samples;
  } else if (span_) {
    if (downgrade_notes_++ < notes_max) out.push_back(end_note(*span_));
    span_.reset();
  }
  const double wait_ms = double(r.data_wait_ns) / 1e6;
  if (wait_ms > max_wait_ms_) {
    ++slow_steps_;
    slowest_ms_ = std::max(slowest_ms_, wait_ms);
    if (slow_notes_++ < notes_max)
      out.push_back({"slow_data", "step " + std::to_string(r.step) + " waited " + ms_text(wait_ms) +
                                      " for data, over io.max_data_wait_ms " + ms_text(max_wait_ms_) +
                                      (slow_notes_ == notes_max ? "; later ones are counted in the summary only" : "")});
  }
  return out;
}

std::optional<data_note> data_watch::finish() {
  if (!span_) return std::nullopt;
  const auto n = end_note(*span_);
  span_.reset();
  if (downgrade_notes_++ >= notes_max) return std::nullopt;
  return n;
}

std::string data_watch::summary() const {
  std::string s = "video downgrades " + std::to_string(downgraded_total_);
  if (spans_ > 0) s += " in " + std::to_string(spans_) + (spans_ == 1 ? " span" : " spans");
  s += "; " + std::to_string(slow_steps_) + (slow_steps_ == 1 ? " step" : " steps") + " waited over io.max_data_wait_ms " +
       ms_text(max_wait_ms_);
  if (slow_steps_ > 0) s += " (max " + ms_text(slowest_ms_) + ")";
  return s;
}

}  // namespace msomni::orchestrator
