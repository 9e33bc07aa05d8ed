// run_journal (see run_journal.hpp).
#include "run_journal.hpp"

#include "elastic_core.hpp"

#include "core/clock.hpp"
#include "core/secret_file.hpp"

#include "orchestrator_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace msomni::orchestrator {

namespace {

int open_append(const std::filesystem::path& p) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot open " + p.string() + ": " + std::strerror(errno));
  return fd;
}

}  // namespace

run_journal::run_journal(const std::filesystem::path& run_dir) : run_dir_(run_dir) {
  metrics_fd_ = open_append(run_dir / "metrics.jsonl");
  try {
    events_fd_ = open_append(run_dir / "events.jsonl");
  } catch (...) {
    ::close(metrics_fd_);
    throw;
  }
  uint64_t last = 0;
  std::ifstream in(run_dir / "attempt");
  if (in) in >> last;
  attempt_ = last + 1;
  store_attempt();
  if (failed_) {
    ::close(metrics_fd_);
    ::close(events_fd_);
    throw std::runtime_error(failure_);
  }
}

run_journal::~run_journal() {
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (events_fd_ >= 0) ::close(events_fd_);
}

void run_journal::store_attempt() {
  // Small and rewritten rarely: replaced whole (temporary, fsync, rename), so a crash leaves
  // the old or new number.
  try {
    write_private_file((run_dir_ / "attempt").string(), std::to_string(attempt_.load()) + "\n");
  } catch (const std::exception& e) {
    failure_ = std::string("cannot record the attempt number: ") + e.what();
    failed_ = true;
  }
}

bool run_journal::append(int fd, const std::string& line, const char* file) {
  if (failed_) return false;
  const off_t before = ::lseek(fd, 0, SEEK_END);
  const ssize_t n = ::write(fd, line.data(), line.size());
  if (n == static_cast<ssize_t>(line.size())) return true;
  const int err = n < 0 ? errno : ENOSPC;  // a short write on a regular file means the disk is full
  if (n > 0 && before >= 0) (void)::ftruncate(fd, before);  // no torn line left behind
  failure_ = std::string("cannot write ") + (run_dir_ / file).string() + ": " + std::strerror(err);
  failed_ = true;
  return false;
}

bool run_journal::metric(nlohmann::ordered_json record) {
  if (!record.is_object()) throw std::invalid_argument("run_journal::metric wants one JSON object");
  std::lock_guard<std::mutex> lock(mutex_);
  record["attempt"] = attempt_.load();
  return append(metrics_fd_, json_text(record) + "\n", "metrics.jsonl");
}

bool run_journal::event(const std::string& kind, const std::string& reason, const event_context& ctx) {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::ordered_json line{{"time_ms", unix_ms()}, {"event", kind}, {"reason", reason}, {"kind", kind}};
  if (ctx.step) line["step"] = *ctx.step;
  if (ctx.epoch) line["epoch"] = *ctx.epoch;
  if (!ctx.rank.empty()) line["rank"] = ctx.rank;
  if (!ctx.node.empty()) line["node"] = ctx.node;
  if (ctx.fields.is_object())
    for (const auto& [key, value] : ctx.fields.items())
      if (!line.contains(key)) line[key] = value;
  line["attempt"] = attempt_.load();
  const bool kept = append(events_fd_, json_text(line) + "\n", "events.jsonl");
  if (kept && observer_) observer_(line);
  return kept;
}

void run_journal::observe_events(std::function<void(const nlohmann::ordered_json&)> observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  observer_ = std::move(observer);
}

uint64_t run_journal::begin_attempt(uint64_t from_step, const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++attempt_;
    store_attempt();
  }
  event_context ctx;
  ctx.step = from_step;
  event("attempt_started", "attempt " + std::to_string(attempt_.load()) + " resumes from step " +
                               std::to_string(from_step) + ": " + cause, ctx);
  return attempt_;
}

namespace {

// Calls `take` with each line of `in` that is a JSON object; other lines are skipped.
template <class Take>
void for_each_object(std::istream& in, Take take) {
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) take(j);
  }
}

}  // namespace

journal_history history_in(std::istream& events) {
  journal_history h;
  for_each_object(events, [&h](const nlohmann::json& j) {
    if (const auto it = j.find("epoch"); it != j.end() && it->is_number_unsigned())
      h.highest_epoch = std::max(h.highest_epoch, it->get<uint64_t>());
    if (const auto it = j.find("rank"); it != j.end() && it->is_string())
      if (const auto id = rank_id_of(it->get<std::string>())) h.next_rank_id = std::max(h.next_rank_id, *id + 1);
  });
  return h;
}

uint64_t last_step_in(std::istream& metrics) {
  uint64_t last = 0;
  for_each_object(metrics, [&last](const nlohmann::json& j) {
    if (const auto it = j.find("step"); it != j.end() && it->is_number_unsigned()) last = it->get<uint64_t>();
  });
  return last;
}

}  // namespace msomni::orchestrator
