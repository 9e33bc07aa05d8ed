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

namespace {

// The complete lines of `path` from `offset` on (at most `max`), moving `offset` past them; a
// file shorter than `offset` is read from its start.
std::vector<std::string> new_lines(const std::string& path, uint64_t& offset, size_t max) {
  std::vector<std::string> out;
  if (path.empty()) return out;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size == offset) return out;  // nothing new: no need to open it
  if (size < offset) offset = 0;        // a fresh run started the file again
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  in.seekg(static_cast<std::streamoff>(offset));
  std::string line;
  for (size_t n = 0; n < max && std::getline(in, line) && !in.eof(); ++n) {  // eof: no newline yet
    offset += line.size() + 1;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

std::vector<msg::job_step_report> metrics_follower::poll(size_t max) {
  std::vector<msg::job_step_report> out;
  for (const auto& line : new_lines(path_, offset_, max))
    if (auto r = step_report_from(job_, line)) out.push_back(std::move(*r));
  return out;
}

events_follower::events_follower(std::string run_dir)
    : path_(run_dir.empty() ? std::string() : (std::filesystem::path(run_dir) / "events.jsonl").string()) {}

std::vector<std::string> events_follower::poll(size_t max) { return new_lines(path_, offset_, max); }

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
