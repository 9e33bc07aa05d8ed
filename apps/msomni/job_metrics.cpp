// job_metrics (see job_metrics.hpp).
#include "job_metrics.hpp"

#include "core/json_number.hpp"

#include <cmath>
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

namespace {

// The saved step of one metrics line, if it says it saved.
std::optional<uint64_t> saved_step_of_line(const std::string& line) {
  if (line.find("checkpoint_ms") == std::string::npos) return std::nullopt;  // most lines: no need to parse
  const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !(non_negative(record, "checkpoint_ms") > 0)) return std::nullopt;
  const auto step = get_number(record, "step");
  if (!step || !(*step >= 0) || *step != std::floor(*step) || *step > 9.0e15) return std::nullopt;
  return static_cast<uint64_t>(*step);
}

// How much of metrics.jsonl saved_step_in_metrics reads back at most, and in what pieces.
constexpr uint64_t saved_step_scan_bytes = 64ull << 20;
constexpr uint64_t saved_step_chunk_bytes = 1ull << 20;

}  // namespace

std::optional<uint64_t> saved_step_in(const std::string& lines) {
  size_t end = lines.size();
  while (end > 0) {
    const size_t nl = lines.rfind('\n', end - 1);
    const size_t begin = nl == std::string::npos ? 0 : nl + 1;
    if (auto step = saved_step_of_line(lines.substr(begin, end - begin))) return step;
    if (nl == std::string::npos) break;
    end = nl;
  }
  return std::nullopt;
}

std::optional<uint64_t> saved_step_in_metrics(const std::string& run_dir) {
  if (run_dir.empty()) return std::nullopt;
  const auto path = std::filesystem::path(run_dir) / "metrics.jsonl";
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  // Backwards, a chunk at a time; `tail` holds the part of a line cut at the chunk's start.
  std::string tail;
  uint64_t pos = size;
  while (pos > 0 && size - pos < saved_step_scan_bytes) {
    const uint64_t from = pos > saved_step_chunk_bytes ? pos - saved_step_chunk_bytes : 0;
    std::string chunk(pos - from, '\0');
    in.seekg(static_cast<std::streamoff>(from));
    if (!in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()))) return std::nullopt;
    chunk += tail;
    // The first line of the chunk may be cut (unless it starts the file): kept for the next.
    const size_t first_nl = from == 0 ? std::string::npos : chunk.find('\n');
    if (from > 0 && first_nl == std::string::npos) {
      tail = std::move(chunk);
      pos = from;
      continue;
    }
    const size_t whole = from == 0 ? 0 : first_nl + 1;
    if (auto step = saved_step_in(chunk.substr(whole))) return step;
    tail = chunk.substr(0, whole == 0 ? 0 : whole - 1);
    pos = from;
  }
  return std::nullopt;
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
