// What one msomni-run did, for RUN_DIR/summary.json and summary.txt: the orchestrator tallies
// the steps, events and checkpoints as they are journaled (run_tally), and at the end the
// control process adds how it ended (run_end) and writes both forms. Pure: records in, JSON
// and text out; nothing is read or written here.
#pragma once

#include "bad_sample_ledger.hpp"

#include "progress_core.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace msomni::orchestrator {

// How a run ends, with msomni-run's exit code for it (docs/run_directory.md lists them).
// Both stops end with a final checkpoint and resume the same way; they differ in who asked:
// "stopped" (5) a person (SIGINT, `msomni stop`), "preempted" (4) a manager taking the
// resources back with SIGTERM (msomni job on a scheduler's preemption or shrink, Slurm,
// Kubernetes, a plain kill).
inline constexpr int exit_finished = 0;
inline constexpr int exit_failed = 1;
// The pre-flight failed (on this node before anything started, or on an agent's node before
// any rank did): nothing was trained.
inline constexpr int exit_preflight_failed = 3;
inline constexpr int exit_preempted = 4;
inline constexpr int exit_stopped = 5;
// Another control process leads the job now ([control] store): this one stopped its ranks
// with a final checkpoint and left; the new leader resumes the job.
inline constexpr int exit_deposed = 6;

// The elastic events counted in the summary (and marked on `msomni plot`): membership changes
// and what they caused.
bool is_elastic_event(const std::string& kind);

// Everything a run's summary counts, gathered while it runs.
struct run_facts {
  uint64_t last_step = 0;     // the job's step when it ended (this run or an earlier one)
  uint64_t total_steps = 0;
  uint64_t steps_recorded = 0;  // metrics lines this run wrote (replayed steps count again)
  std::optional<uint64_t> first_step;  // of this run
  std::optional<double> loss_first, loss_last, loss_min;  // finite losses only
  std::optional<double> tokens_per_s_median, step_time_ms_median, data_wait_ms_median;
  std::vector<uint32_t> world_sizes;  // ascending, each once
  std::map<std::string, uint64_t> elastic_events;  // by kind
  uint64_t checkpoints_committed = 0, checkpoint_failures = 0;
  std::optional<uint64_t> last_checkpoint_step;  // committed by this run
  std::map<std::string, uint64_t> bad_samples;   // by reason
  std::vector<bad_sample_ledger::entry> bad_sample_list;  // the distinct samples behind them (bounded)
  uint64_t bad_samples_unlisted_draws = 0;               // draws of samples past the listing
  uint64_t mismatched_names = 0;  // good samples decoded by bytes unlike their names
  uint64_t downgraded_samples = 0;  // videos decoded keyframe-only
  uint64_t slow_data_steps = 0;     // steps that waited longer than io.max_data_wait_ms
};

class run_tally {
 public:
  // Samples kept for the medians: beyond it every other one is dropped and from then on
  // only every 2nd (4th, ...) step is kept, so a long run's medians cost a bounded memory.
  static constexpr size_t median_samples_max = 8192;

  explicit run_tally(uint64_t total_steps) { facts_.total_steps = total_steps; }
  void on_step(const metrics_record& r);
  void on_event(const std::string& kind);
  void on_checkpoint(uint64_t step, bool ok);
  // What the orchestrator's other cores counted (they are the authority for these).
  run_facts facts(uint64_t last_step, const std::map<std::string, uint64_t>& bad_samples, uint64_t downgraded_samples,
                  uint64_t slow_data_steps) const;

 private:
  struct samples {
    std::vector<double> kept;
    uint64_t stride = 1, seen = 0;
    void add(double v);
    std::optional<double> median() const;
  };
  run_facts facts_;
  std::set<uint32_t> worlds_;
  samples tokens_, step_ms_, wait_ms_;
};

// How the run ended, known to the control process.
struct run_end {
  std::string state;  // finished | stopped | preempted | failed
  int exit_code = 0;
  std::string reason;
  int64_t started_ms = 0, ended_ms = 0;  // Unix time
  uint64_t attempt = 0;
  // The checkpoint the next msomni-run resumes from (the latest pointer), if any.
  std::optional<uint64_t> resume_step;
  std::string resume_checkpoint;  // its directory name under the checkpoint root
  std::string run_dir;
  std::string checkpoint_dir;
  // Ranks that died by a signal after giving their result, each as the rank_crashed event says.
  std::vector<std::string> rank_crashes;
};

// {"state","exit_code","reason","steps":{"done","total","recorded"},"wall_s","tokens_per_s_median",
//  "step_time_ms_median","data_wait_ms_median","loss":{"first","last","min"},"world_sizes":[..],
//  "elastic_events":{kind:n},"checkpoints":{"committed","failed","last_step"},"resume":{..},
//  "bad_samples":{"total","by_reason","samples":[..],"unlisted_draws"},"mismatched_names",
//  "downgraded_samples","slow_data_steps",...}
nlohmann::ordered_json summary_json(const run_facts& f, const run_end& e);
// The same for a person: a dozen lines.
std::string summary_text(const run_facts& f, const run_end& e);

}  // namespace msomni::orchestrator
