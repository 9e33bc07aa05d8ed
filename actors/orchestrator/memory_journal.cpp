// memory_journal (see memory_journal.hpp).
#include "memory_journal.hpp"

#include "config/config_limits.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"
#include "metrics/metrics_registry.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace msomni::orchestrator {

namespace {

nlohmann::ordered_json features_json(const msg::batch_features& f) {
  nlohmann::ordered_json j;
  j["samples"] = {{"image", f.image_samples}, {"video", f.video_samples}, {"text", f.text_samples}};
  j["image_patches"] = f.image_patches;
  j["video_patches"] = f.video_patches;
  j["text_tokens"] = f.text_tokens;
  j["seq_len"] = f.seq_len;
  j["micro_batch"] = f.micro_batch;
  return j;
}

}  // namespace

std::string memory_sample_problem(const msg::memory_sample& s, const std::map<std::string, member_info>& members,
                                  uint64_t current_epoch, size_t max_upcoming) {
  const auto m = members.find(s.name);
  if (m == members.end()) return "from \"" + s.name + "\", no member of this job";
  if (m->second.state == member_state::left || m->second.state == member_state::dead)
    return "from " + s.name + ", which is no longer a member";
  if (s.epoch > current_epoch || s.epoch < m->second.member_since)
    return "of epoch " + std::to_string(s.epoch) + ", outside " + s.name + "'s epochs " +
           std::to_string(m->second.member_since) + ".." + std::to_string(current_epoch);
  if (s.world_size == 0 || s.rank >= s.world_size)
    return "rank index " + std::to_string(s.rank) + " outside a world of " + std::to_string(s.world_size);
  if (s.step == 0) return "step 0 (steps count from 1)";
  if (s.peak_bytes < s.in_use_bytes)
    return "peak " + std::to_string(s.peak_bytes) + " bytes below the " + std::to_string(s.in_use_bytes) + " in use";
  if (s.upcoming.size() > max_upcoming)
    return std::to_string(s.upcoming.size()) + " upcoming batches, more than memory.horizon_steps allows (" +
           std::to_string(max_upcoming) + ")";
  return "";
}

nlohmann::ordered_json memory_trace_line(const msg::memory_sample& s, double t_ms, const std::string& event) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["t_ms"] = std::round(t_ms * 1000) / 1000;
  j["in_use_bytes"] = s.in_use_bytes;
  j["peak_bytes"] = s.peak_bytes;
  j["batch"] = features_json(s.batch);
  auto& up = j["upcoming"] = nlohmann::ordered_json::array();
  for (const auto& f : s.upcoming) up.push_back(features_json(f));
  j["world_size"] = s.world_size;
  j["event"] = event;
  return j;
}

memory_journal::memory_journal(std::filesystem::path dir, int64_t start_unix_ns, memory_journal_settings settings)
    : dir_(std::move(dir)), start_unix_ns_(start_unix_ns), settings_(settings) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("cannot create " + dir_.string() + ": " + ec.message());
}

memory_journal::~memory_journal() {
  for (auto& [rank, t] : ranks_) {
    if (t.steps.fd >= 0) ::close(t.steps.fd);
    if (t.in_step.fd >= 0) ::close(t.in_step.fd);
  }
}

bool memory_journal::append(rank_file& f, const std::string& stem, const std::string& line) {
  if (failed_) return false;
  if (f.bytes + line.size() > settings_.max_file_bytes) {
    ++dropped_;
    return true;  // bounded, not failed: the line is counted instead
  }
  if (f.fd < 0) {
    // A file of its own, created here: an older run's (left by msomni-run --fresh, which
    // removes only the journals it knows) is never appended to, so steps stay in order.
    for (int k = 1; f.fd < 0 && k <= 1000; ++k) {
      f.path = dir_ / (stem + (k == 1 ? "" : ".run-" + std::to_string(k)) + ".jsonl");
      f.fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
      if (f.fd < 0 && errno != EEXIST) break;
    }
    if (f.fd < 0) {
      failure_ = "cannot create " + f.path.string() + ": " + std::strerror(errno);
      failed_ = true;
      return false;
    }
  }
  const auto& path = f.path;
  const off_t before = ::lseek(f.fd, 0, SEEK_END);
  const ssize_t n = ::write(f.fd, line.data(), line.size());
  if (n == static_cast<ssize_t>(line.size())) {
    f.bytes += line.size();
    return true;
  }
  const int err = n < 0 ? errno : ENOSPC;  // a short write on a regular file means the disk is full
  if (n > 0 && before >= 0) (void)::ftruncate(f.fd, before);  // no torn line left behind
  failure_ = "cannot write " + path.string() + ": " + std::strerror(err);
  failed_ = true;
  return false;
}

bool memory_journal::record(const msg::memory_sample& s, uint64_t attempt) {
  auto& t = ranks_[s.rank];
  if (t.attempt != attempt) {  // a new attempt's files: the steps start over
    for (auto* f : {&t.steps, &t.in_step})
      if (f->fd >= 0) ::close(f->fd);
    t = rank_trace{};
    t.attempt = attempt;
  }
  const double t_ms = static_cast<double>(s.at_ns - start_unix_ns_) / 1e6;
  const auto base = "rank-" + std::to_string(s.rank) + (attempt > 1 ? ".attempt-" + std::to_string(attempt) : "");
  if (s.in_step) {
    if (t.in_step_of != s.step) t.in_step_of = s.step, t.in_step_lines = 0;
    if (t.in_step_lines >= settings_.max_in_step) {
      ++dropped_;
      return true;
    }
    ++t.in_step_lines;
    nlohmann::ordered_json j;
    j["step"] = s.step;
    j["t_ms"] = std::round(t_ms * 1000) / 1000;
    j["in_use_bytes"] = s.in_use_bytes;
    j["peak_bytes"] = s.peak_bytes;
    j["host_batch_bytes"] = s.host_batch_bytes;
    return append(t.in_step, base + ".in_step", json_text(j) + "\n");
  }
  if (t.last_step && s.step <= *t.last_step) {
    ++dropped_;
    return true;
  }
  std::string event;
  if (!t.last_step && (attempt > 1 || s.step > 1)) event = "resume";
  else if (t.last_step && s.world_size != t.last_world) event = "resize";
  t.last_step = s.step;
  t.last_world = s.world_size;
  auto& m = steps_[s.step];
  m.in_use = std::max(m.in_use, s.in_use_bytes);
  m.peak = std::max(m.peak, s.peak_bytes);
  ++m.ranks;
  while (steps_.size() > settings_.steps_kept) steps_.erase(steps_.begin());
  return append(t.steps, base, json_text(memory_trace_line(s, t_ms, event)) + "\n");
}

void memory_journal::annotate(nlohmann::ordered_json& metrics_record, uint64_t step) const {
  const auto it = steps_.find(step);
  if (it == steps_.end()) return;
  metrics_record["memory"] = {{"in_use_bytes", it->second.in_use}, {"peak_bytes", it->second.peak},
                              {"ranks", it->second.ranks}};
}

memory_hook::memory_hook(std::unique_ptr<memory_journal> journal, std::function<uint64_t()> attempt,
                         prometheus::Counter* accepted, prometheus::Counter* refused)
    : journal_(std::move(journal)), attempt_(std::move(attempt)), accepted_(accepted), refused_(refused) {}

memory_hook::outcome memory_hook::take(const msg::memory_sample& s, const std::map<std::string, member_info>& members,
                                       uint64_t current_epoch) {
  const auto problem = memory_sample_problem(s, members, current_epoch, config::limits::memory::horizon_steps.max);
  if (!problem.empty()) {
    ++refused_total_;
    if (refused_) refused_->Increment();
    if (refused_by_sender_.size() > 1024) refused_by_sender_.clear();  // bounded: a flood of names
    if (refused_by_sender_[s.name]++ % 100 == 0) {
      MSOMNI_LOG(warn, "orchestrator") << "dropped a memory sample: " << problem;
    }
    return outcome::refused;
  }
  if (accepted_) accepted_->Increment();
  if (journal_ && !journal_->record(s, attempt_ ? attempt_() : 1)) return outcome::journal_failed;
  return outcome::accepted;
}

std::unique_ptr<memory_hook> make_memory_hook(run_journal* journal, std::shared_ptr<metrics::metrics_registry> registry) {
  std::unique_ptr<memory_journal> j;
  if (journal) {
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
    j = std::make_unique<memory_journal>(journal->run_dir() / "memory", now.count(), memory_journal_settings{});
  }
  prometheus::Counter* accepted = nullptr;
  prometheus::Counter* refused = nullptr;
  if (registry) {
    accepted = &registry->counter("msomni_memory_samples_total", {{"result", "accepted"}});
    refused = &registry->counter("msomni_memory_samples_total", {{"result", "refused"}});
  }
  std::function<uint64_t()> attempt;
  if (journal) attempt = [journal] { return journal->attempt(); };
  return std::make_unique<memory_hook>(std::move(j), std::move(attempt), accepted, refused);
}

}  // namespace msomni::orchestrator
