// A rank's side of checkpointing in a multi-process job: every interval_steps the rank hands
// a snapshot of its full state (model, optimizer, step counter, data position) to its async
// writer and trains on; after every following step the ranks agree (one small all-reduce)
// whether every rank's shard is on disk, and the first step at which all are, they exchange
// their shard records and rank 0 commits the checkpoint atomically. The commit step is
// decided collectively, so it is the same on every rank. A save that fails removes its own
// staging directory and is tried again at the next interval; after max_consecutive_failures
// failed saves in a row every rank throws checkpoint_give_up after the same step. Loading
// verifies every checksum first and falls back to older checkpoints, saying why.
//
//   idle --boundary: submit snapshot--> writing --every step: all durable? (collective)
//   writing --all durable, next boundary or finish: gather + commit--> idle
//   commit failed --> staging removed, failures_in_a_row + 1 --limit reached--> give up
#pragma once

#include "checkpoint_store.hpp"
#include "checkpoint_writer.hpp"
#include "collectives/communicator.hpp"
#include "rank_trainer.hpp"
#include "save_cadence.hpp"

#include "messages/training_messages.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace msomni::rank_worker {

ckpt::rank_state to_rank_state(const model::model_state& s);
// The name of the first tensor holding a NaN or an infinity, or "" when all are finite.
std::string first_nonfinite_tensor(const model::model_state& s);
model::model_state to_model_state(const ckpt::rank_state& s);

struct checkpointing_settings {
  std::string dir;
  uint64_t interval_steps = 50;
  uint64_t keep = 3;
  int zstd_level = 1;
  int zstd_threads = 2;
  uint64_t config_hash = 0;
  // Called on rank 0 after every commit attempt (the orchestrator journals it).
  std::function<void(const msg::checkpoint_done&)> on_commit;
  uint64_t max_consecutive_failures = 3;
  ckpt::io_fault_plan* faults = nullptr;  // tests only
  // The resolved job config by key (config::job_config::resolved_values), recorded in every
  // manifest so tools can show what wrote a checkpoint.
  std::map<std::string, std::string> config;
};

// Every rank throws this after the same step once max_consecutive_failures saves in a row
// were not committed; what() names the count and the last save's cause (errno text).
class checkpoint_give_up : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One save from the snapshot handed to the writer to the agreed commit (or failure).
struct save_timing {
  uint64_t step = 0;                // the step saved
  uint64_t decided_after_step = 0;  // the step after which the ranks committed or gave it up
  bool committed = false;
  int64_t request_to_commit_ns = 0;  // submit to the end of the commit, on this rank
  int64_t write_ns = 0;              // this rank's shard: compress + write + fsync
  int64_t commit_ns = 0;             // the record exchange and the commit itself
  std::string error;                 // why, when not committed (the same on every rank)
};

class rank_checkpointer {
 public:
  rank_checkpointer(checkpointing_settings s, uint32_t rank);
  ~rank_checkpointer();

  // Call after every optimizer step; `last` marks the final step of the run. Collective.
  void after_step(rank_trainer& trainer, transport::communicator& comm, bool last);
  // The same for a state that is not a trainer's (tests, tools): `snapshot` is called only
  // when a save is due.
  // `healthy` is false after a step whose loss or gradient was not finite: no save is taken
  // then (nor of any state holding a non-finite value), so such a state never rotates a good
  // checkpoint out; the save is reported as skipped and the next interval tries again.
  void after_step(uint64_t step, const std::function<model::model_state()>& snapshot,
                  transport::communicator& comm, bool last, bool healthy = true);
  // Commits the save still in flight, if any, waiting for its shards (collective).
  void finish(transport::communicator& comm);
  // A full checkpoint of the current step, committed and verified (every shard read back
  // and checked) before it returns: what precedes a scale-down or a stop. Collective.
  // Returns the step saved; throws std::runtime_error when it cannot be committed or verified.
  uint64_t save_verified(rank_trainer& trainer, transport::communicator& comm);

  uint64_t saves_committed() const { return committed_; }
  uint64_t failures_in_a_row() const { return cadence_.failures_in_a_row(); }
  bool save_pending() const { return pending_.has_value(); }
  double blocked_seconds() const;
  // The save decided since the last call (committed or not), once.
  std::optional<save_timing> take_decided();

  // The newest verified state of `rank` in a run of `world` ranks, or nullopt when there is
  // none; `log` gets a line for every checkpoint passed over and why. A checkpoint of another
  // replica count is resharded: weights, moments and counters are replicated, and so is the
  // data position when every old rank saved the same one (the global sample order).
  // `skipped` (when given) gets the number of checkpoints passed over as torn or mismatched.
  static std::optional<model::model_state> load_latest(const std::string& dir, uint32_t rank, uint32_t world,
                                                       bool synthetic_data, std::string& log,
                                                       uint64_t* skipped = nullptr);

 private:
  // Commits what is in flight, then hands a snapshot of `step` to the writer.
  void submit(uint64_t step, const std::function<model::model_state()>& snapshot, transport::communicator& comm,
              bool healthy = true);
  // Whether every rank's writer is done with the save in flight (collective, never waits).
  bool all_durable(transport::communicator& comm);
  // This rank's writer's outcome for the save in flight (the writer is idle).
  ckpt::save_outcome own_outcome();
  // Every rank's shard record of the save in flight, one broadcast per rank (collective);
  // `why` gets the first failed rank's cause, or stays empty.
  std::vector<ckpt::shard_record> exchange_records(transport::communicator& comm, const ckpt::save_outcome& mine,
                                                   std::string& why);
  // Rank 0 commits the save when no rank failed, else removes its staging directory; reports
  // the attempt to on_commit. Returns whether it committed; `reason` gets the report's error.
  bool commit_on_rank_zero(const std::vector<ckpt::shard_record>& records, const std::string& why, std::string& reason);
  // Every rank learns rank 0's verdict and its reason (collective). Returns whether it committed.
  bool share_verdict(transport::communicator& comm, bool committed, std::string& reason);
  // What follows a verdict on this rank: retention on rank 0 after a commit, the staging
  // directory removed on the others after a failure.
  void tidy_after_verdict(bool committed);
  // Records the decided save and counts it; throws checkpoint_give_up when the failures in a
  // row reach the limit.
  void conclude(bool committed, const std::string& reason, int64_t write_ns, int64_t decide_from);

  checkpointing_settings settings_;
  uint32_t rank_;
  ckpt::checkpoint_store store_;
  ckpt::save_cadence cadence_;
  std::unique_ptr<ckpt::checkpoint_writer> writer_;
  std::mutex mutex_;
  std::optional<ckpt::save_outcome> outcome_;
  std::optional<ckpt::checkpoint_meta> pending_;
  int64_t submitted_ns_ = 0;
  uint64_t last_step_seen_ = 0;
  uint64_t committed_ = 0;
  std::optional<save_timing> decided_;
};

}  // namespace msomni::rank_worker
