// A rank's side of checkpointing in a multi-process job: every interval_steps the rank hands
// a snapshot of its full state (model, optimizer, step counter, data position) to its async
// writer and trains on; at the next save boundary (or at the end) the ranks exchange their
// shard records over the communicator and rank 0 commits the checkpoint atomically. Loading
// verifies every checksum first and falls back to older checkpoints, saying why.
//
//   idle --boundary: submit snapshot--> writing --next boundary/finish: gather + commit--> idle
#pragma once

#include "checkpoint_store.hpp"
#include "checkpoint_writer.hpp"
#include "collectives/communicator.hpp"
#include "rank_trainer.hpp"

#include "messages/training_messages.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace msomni::rank_worker {

ckpt::rank_state to_rank_state(const model::model_state& s);
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
};

class rank_checkpointer {
 public:
  rank_checkpointer(checkpointing_settings s, uint32_t rank);
  ~rank_checkpointer();

  // Call after every optimizer step; `last` marks the final step of the run.
  void after_step(rank_trainer& trainer, transport::communicator& comm, bool last);
  // Commits the save still in flight, if any (collective).
  void finish(transport::communicator& comm);
  // A full checkpoint of the current step, committed and verified (every shard read back
  // and checked) before it returns: what precedes a scale-down or a stop. Collective.
  // Returns the step saved; throws std::runtime_error when it cannot be committed or verified.
  uint64_t save_verified(rank_trainer& trainer, transport::communicator& comm);

  uint64_t saves_committed() const { return committed_; }
  double blocked_seconds() const;

  // The newest verified state of `rank` in a run of `world` ranks, or nullopt when there is
  // none; `log` gets a line for every checkpoint passed over and why. A checkpoint of another
  // replica count is resharded: weights, moments and counters are replicated, and so is the
  // data position when every old rank saved the same one (the global sample order).
  static std::optional<model::model_state> load_latest(const std::string& dir, uint32_t rank, uint32_t world,
                                                       bool synthetic_data, std::string& log);

 private:
  // Commits what is in flight, then hands a snapshot of the current step to the writer.
  void submit(rank_trainer& trainer, transport::communicator& comm);

  checkpointing_settings settings_;
  uint32_t rank_;
  ckpt::checkpoint_store store_;
  std::unique_ptr<ckpt::checkpoint_writer> writer_;
  std::mutex mutex_;
  std::optional<ckpt::save_outcome> outcome_;
  std::optional<ckpt::checkpoint_meta> pending_;
  uint64_t committed_ = 0;
};

}  // namespace msomni::rank_worker
