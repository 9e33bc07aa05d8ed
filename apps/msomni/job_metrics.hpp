// RUN_DIR/metrics.jsonl as the scheduler's predictor sees it. msomni-run appends one line per
// optimizer step; `msomni job` follows the file and turns each new complete line into a
// job_step_report, and after a scheduler restart reads the newest lines again.
#pragma once

#include "messages/cluster_job_messages.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msomni::cli {

// One metrics line as a step report for `job`; nullopt for a line that is not a JSON object
// or lacks a positive, finite step_time_ms. Non-finite numbers are read in the form
// core/json_number.hpp writes (null plus "<key>_nonfinite": true). The step spans the checkpoint the rank stood still for after it
// (step_time_ms + checkpoint_ms). No bubble share: msomni-run has no pipeline stages.
std::optional<msg::job_step_report> step_report_from(const std::string& job, const std::string& line);

// The step of the newest line of `lines` (metrics.jsonl lines, one per step) that says the
// command saved a checkpoint after its step: "checkpoint_ms" > 0 and a whole, non-negative
// "step". msomni-run writes such lines; any command run by msomni job may, which is how
// msomni job learns the step a command that keeps its checkpoints its own way last saved.
// nullopt: no line says so.
std::optional<uint64_t> saved_step_in(const std::string& lines);
// The same for RUN_DIR/metrics.jsonl, read backwards from its end until a line says so (at
// most its last 64 MiB); nullopt also when there is no such file.
std::optional<uint64_t> saved_step_in_metrics(const std::string& run_dir);

class metrics_follower {
 public:
  // `run_dir` empty: nothing is followed.
  metrics_follower(std::string run_dir, std::string job);
  // Step reports for the complete lines written since the last poll, at most `max` of them
  // (the rest come at the next poll). A file shorter than what was read is a new run's:
  // it is read from its start.
  std::vector<msg::job_step_report> poll(size_t max = 256);
  // The next poll reports the newest `lines` already-read lines again (a restarted
  // scheduler's predictor has no history; it keeps 200 steps per job).
  void rewind(size_t lines);
  uint64_t offset() const noexcept { return offset_; }

 private:
  std::string path_, job_;
  uint64_t offset_ = 0;  // bytes of complete lines already reported
};

// RUN_DIR/events.jsonl as lines: the complete lines written since the last poll, at most
// `max` (the rest at the next poll); a file shorter than what was read is read again from its
// start. `msomni job` gives them to its memory_report_tracker (job_runner/job_memory.hpp).
class events_follower {
 public:
  explicit events_follower(std::string run_dir);  // empty: nothing is followed
  std::vector<std::string> poll(size_t max = 256);

 private:
  std::string path_;
  uint64_t offset_ = 0;
};

}  // namespace msomni::cli
