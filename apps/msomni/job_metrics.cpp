// job_metrics (see job_metrics.hpp).
#include "job_metrics.hpp"

#include "core/json_number.hpp"

#include <filesystem>
#include <fstream>

namespace msomni::cli {

namespace {

// Reading back at most this much to rewind: 200 lines of msomni-run's metrics fit easily.
constexpr uint64_t rewind_window_bytes = 512 * 1024;

// The non-negative number under `key`; 0 when it is absent, negative or not finite.
double non_negative(const nlohmann::json& record, const std::string& key) {
  const double v = get_number(record, key).value_or(0);
  return v > 0 ? v : 0;
}

}  // namespace

std::optional<msg::job_step_report> step_report_from(const std::string& job, const std::string& line) {
  const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  const double step_ms = non_negative(record, "step_time_ms");
  if (!(step_ms > 0)) return std::nullopt;
  const double wait_ms = non_negative(record, "data_wait_ms");
  const double checkpoint_ms = non_negative(record, "checkpoint_ms");
  // The predictor's step spans every idle part of it; msomni-run's step_time_ms ends at the
  // optimizer update, before the checkpoint the rank then stood still for.
  return msg::job_step_report{job, (step_ms + checkpoint_ms) / 1000, wait_ms / 1000, checkpoint_ms / 1000, 0};
}

metrics_follower::metrics_follower(std::string run_dir, std::string job)
    : path_(run_dir.empty() ? std::string() : (std::filesystem::path(run_dir) / "metrics.jsonl").string()),
      job_(std::move(job)) {}

std::vector<msg::job_step_report> metrics_follower::poll(size_t max) {
  std::vector<msg::job_step_report> out;
  if (path_.empty()) return out;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path_, ec);
  if (ec || size == offset_) return out;  // nothing new: no need to open it
  if (size < offset_) offset_ = 0;       // a fresh run started the file again
  std::ifstream in(path_, std::ios::binary);
  if (!in) return out;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string line;
  for (size_t n = 0; n < max && std::getline(in, line) && !in.eof(); ++n) {  // eof: no newline yet
    offset_ += line.size() + 1;
    if (auto r = step_report_from(job_, line)) out.push_back(std::move(*r));
  }
  return out;
}

void metrics_follower::rewind(size_t lines) {
  if (path_.empty() || offset_ == 0 || lines == 0) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  const uint64_t from = offset_ > rewind_window_bytes ? offset_ - rewind_window_bytes : 0;
  std::string tail(offset_ - from, '\0');
  in.seekg(static_cast<std::streamoff>(from));
  if (!in.read(tail.data(), static_cast<std::streamsize>(tail.size()))) return;
  // tail ends with the newline of the last line read; the k-th line from the end starts
  // after the (k+1)-th newline from the end.
  size_t pos = tail.size() - 1, count = 0;
  std::optional<size_t> start;
  while (pos > 0) {
    const auto nl = tail.rfind('\n', pos - 1);
    if (nl == std::string::npos) break;
    if (++count == lines) {
      start = nl + 1;
      break;
    }
    pos = nl;
  }
  if (!start) {  // fewer lines in the window: the file's start, or the window's first whole line
    const auto first = tail.find('\n');
    start = from == 0 ? 0 : (first == std::string::npos ? tail.size() : first + 1);
  }
  offset_ = from + *start;
}

}  // namespace msomni::cli
