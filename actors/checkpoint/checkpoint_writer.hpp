// Per-rank asynchronous checkpoint writer: the rank hands over a host-memory snapshot at a
// step boundary and goes on training while this writer's own thread compresses and writes
// the shard. Bounded: one save in flight; a request while busy is refused and counted (the
// orchestrator asks again at a later boundary). The time the caller spends inside submit
// (the snapshot copy) is the training time lost to checkpointing and is measured.
//
//   idle --submit--> writing --shard fsynced/renamed or error--> idle (on_done called)
//          submit while writing: refused_busy (metric), nothing queued
#pragma once

#include "checkpoint_store.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace msomni::ckpt {

struct save_outcome {
  checkpoint_meta meta;
  uint32_t rank = 0;
  bool ok = false;
  shard_record record;
  std::string error;      // where and why, when !ok
  int sys_errno = 0;      // ENOSPC/EFBIG etc. for I/O failures
  int64_t write_ns = 0;   // compress + write + fsync, off the training path
};

struct writer_metrics {
  uint64_t accepted = 0;
  uint64_t refused_busy = 0;
  uint64_t completed = 0;
  uint64_t failed = 0;
  int64_t blocked_ns_total = 0;  // training time lost: time callers spent in submit*
  int64_t blocked_ns_last = 0;
  int64_t write_ns_last = 0;
  uint64_t bytes_last = 0;
};

class checkpoint_writer {
 public:
  using done_fn = std::function<void(const save_outcome&)>;  // runs on the writer thread
  using clock_fn = std::function<int64_t()>;                 // monotonic nanoseconds

  checkpoint_writer(const checkpoint_store& store, uint32_t rank, done_fn on_done,
                    clock_fn clock = {});
  ~checkpoint_writer();  // lets an in-flight save finish, then joins
  checkpoint_writer(const checkpoint_writer&) = delete;
  checkpoint_writer& operator=(const checkpoint_writer&) = delete;

  enum class submit_result { accepted, refused_busy };

  // The caller already made the copy; handing it over costs a move.
  submit_result submit(const checkpoint_meta& meta, rank_state&& snapshot);
  // Copies `live` into buffers the writer keeps between saves (fresh memory is slow to
  // touch here, so reusing them makes the step-boundary copy cheaper).
  submit_result submit_copy(const checkpoint_meta& meta, const rank_state& live);

  bool busy() const;
  void wait_idle() const;
  writer_metrics metrics() const;
  uint32_t rank() const noexcept { return rank_; }

 private:
  void run();
  void account_blocked(int64_t start_ns);

  const checkpoint_store& store_;
  const uint32_t rank_;
  done_fn on_done_;
  clock_fn clock_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool busy_ = false;
  bool stopping_ = false;
  std::optional<checkpoint_meta> job_meta_;
  rank_state job_;    // the snapshot being written
  rank_state spare_;  // the previous snapshot's buffers, reused by submit_copy
  writer_metrics metrics_;
  std::thread thread_;
};

}  // namespace msomni::ckpt
