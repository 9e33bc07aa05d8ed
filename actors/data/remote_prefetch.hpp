// The read-ahead pool of remote shards (storage::prefetch): reads started ahead of use on a
// few threads of their own (internal to msomni_data).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace msomni::data {

// Bounded: at most io.remote_prefetch reads per source are hinted, the bytes held (queued, in
// flight or done and not yet taken) stay under prefetch_bytes, and a hint that does not fit,
// or a done read that is never taken, is dropped and counted.
class prefetcher {
 public:
  // Reads [offset, offset + bytes.size()) of the shard at `uri` into `bytes`; false when it
  // cannot (a failure is the reader's to meet again, with its reason, when it reads itself).
  using read_fn = std::function<bool(const std::string& uri, uint64_t offset, std::string& bytes)>;
  explicit prefetcher(read_fn read) : read_(std::move(read)) {}

  void hint(const std::string& uri, uint64_t offset, uint64_t length);
  // The bytes of a read hinted before: waits while it runs; false when none was hinted (or it
  // had not started: the caller reads it itself then).
  bool take(const std::string& uri, uint64_t offset, void* dst, size_t n);

 private:
  using key = std::tuple<std::string, uint64_t, uint64_t>;  // shard uri, offset, length
  enum class state { queued, running, done };
  struct slot {
    state st = state::queued;
    bool claimed = false;
    bool ok = false;
    uint64_t seq = 0;
    std::string bytes;
  };

  void work();

  read_fn read_;
  std::mutex m_;
  std::condition_variable cv_, done_;
  std::deque<key> queue_;
  std::map<key, slot> slots_;
  uint64_t held_ = 0, seq_ = 0;
  size_t threads_ = 0;
};

// The process's read-ahead pool (its threads live as long as the process).
prefetcher& read_ahead_pool();

}  // namespace msomni::data
