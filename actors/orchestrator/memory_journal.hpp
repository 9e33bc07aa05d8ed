// The ranks' memory samples in the run directory: RUN_DIR/memory/rank-N.jsonl, one line per
// optimizer step of rank N (its index in the membership), in the trace format of
// docs/memory_traces.md:
//   {"step","t_ms","in_use_bytes","peak_bytes","batch":{"samples":{"image","video","text"},
//    "image_patches","video_patches","text_tokens","seq_len","micro_batch"},"upcoming":[...],
//    "world_size","event"}
// t_ms counts from this control process's start. Steps only go forward in a file: the run's
// attempt 1 writes rank-N.jsonl, a later attempt (a rollback, or msomni-run started again on
// the run directory) rank-N.attempt-A.jsonl, whose first line says "resume"; "resize" marks
// the first line after the rank's world size changed. A sample whose step is not past the
// file's last one (a late one from before a rollback) is dropped and counted. The samples taken
// while a step ran go to rank-N.in_step.jsonl (attempt files alike):
//   {"step","t_ms","in_use_bytes","peak_bytes","host_batch_bytes"}.
// A file is always created by the journal that writes it: when an older run's file has the
// name (msomni-run --fresh leaves memory/ alone), the new one is rank-N.run-K.jsonl.
//
// Every line is written whole with one append and checked, as run_journal does; a failed
// write makes failed() true. Bounded: at most max_in_step lines per rank and step, at most
// max_file_bytes per file (further lines are counted in dropped(), never torn), and the per-step
// maxima for metrics.jsonl are kept for the last steps_kept steps.
#pragma once

#include "elastic_core.hpp"
#include "messages/scheduling_messages.hpp"
#include "run_journal.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace prometheus {
class Counter;
}
namespace msomni::metrics {
class metrics_registry;
}

namespace msomni::orchestrator {

struct memory_journal_settings {
  uint32_t max_in_step = 100;        // in-step lines per rank and step
  uint64_t max_file_bytes = 1ull << 30;
  size_t steps_kept = 64;
};

// Why `s` is not one to keep, or "" when it is: from no member of the job (or one that left),
// of an epoch before the member joined or after the current one, or malformed (world size 0, a
// rank index outside it, step 0, a peak below what is in use, too many upcoming batches).
std::string memory_sample_problem(const msg::memory_sample& s, const std::map<std::string, member_info>& members,
                                  uint64_t current_epoch, size_t max_upcoming);

// The trace line of a step's sample (see above).
nlohmann::ordered_json memory_trace_line(const msg::memory_sample& s, double t_ms, const std::string& event);

class memory_journal {
 public:
  // Creates `dir` (RUN_DIR/memory); throws std::runtime_error when it cannot.
  memory_journal(std::filesystem::path dir, int64_t start_unix_ns, memory_journal_settings settings);
  ~memory_journal();
  memory_journal(const memory_journal&) = delete;
  memory_journal& operator=(const memory_journal&) = delete;

  // Writes an accepted sample's line in the files of run attempt `attempt`; false (and
  // failed()) when it could not be written.
  bool record(const msg::memory_sample& s, uint64_t attempt = 1);
  // Adds "memory": {"in_use_bytes", "peak_bytes", "ranks"} (the largest over the ranks whose
  // sample of `step` arrived, and how many did) to a metrics.jsonl record; nothing when none did.
  void annotate(nlohmann::ordered_json& metrics_record, uint64_t step) const;

  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  uint64_t dropped() const { return dropped_; }

 private:
  struct rank_file {
    int fd = -1;
    uint64_t bytes = 0;
    std::filesystem::path path;
  };
  struct rank_trace {
    uint64_t attempt = 0;
    rank_file steps, in_step;
    std::optional<uint64_t> last_step;
    uint32_t last_world = 0;
    uint64_t in_step_of = 0;  // the step the in-step count is for
    uint32_t in_step_lines = 0;
  };
  struct step_max {
    uint64_t in_use = 0, peak = 0;
    uint32_t ranks = 0;
  };
  // Appends to `f`, creating it on the first line as STEM.jsonl (STEM.run-K.jsonl when an
  // older run left that name).
  bool append(rank_file& f, const std::string& stem, const std::string& line);

  const std::filesystem::path dir_;
  const int64_t start_unix_ns_;
  const memory_journal_settings settings_;
  std::map<uint32_t, rank_trace> ranks_;
  std::map<uint64_t, step_max> steps_;
  bool failed_ = false;
  std::string failure_;
  uint64_t dropped_ = 0;
};

// What the orchestrator's shell does with a memory sample: check it, count it
// (msomni_memory_samples_total{result}), log a refused one (the first per sender, then every
// 100th) and journal an accepted one.
class memory_hook {
 public:
  // `attempt`: the run journal's attempt now (null: always 1).
  memory_hook(std::unique_ptr<memory_journal> journal, std::function<uint64_t()> attempt, prometheus::Counter* accepted,
              prometheus::Counter* refused);
  enum class outcome { accepted, refused, journal_failed };
  // journal_failed when the journal cannot be written (failure() says why): the job should stop.
  outcome take(const msg::memory_sample& s, const std::map<std::string, member_info>& members, uint64_t current_epoch);
  void annotate(nlohmann::ordered_json& metrics_record, uint64_t step) const {
    if (journal_) journal_->annotate(metrics_record, step);
  }
  std::string failure() const { return journal_ ? "the memory journal cannot be written (" + journal_->failure() + ")" : ""; }
  uint64_t refused() const { return refused_total_; }

 private:
  std::unique_ptr<memory_journal> journal_;  // null: no run directory
  std::function<uint64_t()> attempt_;
  prometheus::Counter* accepted_;
  prometheus::Counter* refused_;
  std::map<std::string, uint64_t> refused_by_sender_;
  uint64_t refused_total_ = 0;
};

// The hook of a run: its journal in RUN_DIR/memory when there is a run journal, its counters
// in `registry` when metrics are on (either may be null).
std::unique_ptr<memory_hook> make_memory_hook(run_journal* journal, std::shared_ptr<metrics::metrics_registry> registry);

}  // namespace msomni::orchestrator
