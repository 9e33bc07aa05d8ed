// The read-ahead pool of remote shards (storage::prefetch): runs of samples read ahead of use,
// one GET each, on a few threads of their own (internal to msomni_data).
#pragma once

#include "storage.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace msomni::data {

// A hinted run is one GET of a span of a shard that serves the reads named with it. It is
// held (queued, in flight, or done and not fully taken) until every one of its reads was
// taken; the bytes held stay under io's prefetch_bytes: a hint that does not fit drops the
// oldest done run nobody waits for, or is itself dropped, and both are counted. A reader
// asking for a read of a run still queued reads that run itself, on its own thread, so a
// run's GET is made once.
class prefetcher {
 public:
  // Reads [offset, offset + bytes.size()) of the shard at `uri` into `bytes`; false when it
  // cannot (a failure is the reader's to meet again, with its reason, when it reads itself).
  using read_fn = std::function<bool(const std::string& uri, uint64_t offset, std::string& bytes)>;
  explicit prefetcher(read_fn read) : read_(std::move(read)) {}

  void hint(const std::string& uri, const byte_range& span, const std::vector<byte_range>& reads);
  // The bytes [offset, offset + n) from a run hinted before that holds them: waits while its
  // GET runs; false when none holds them or its GET failed (the caller reads them itself).
  bool take(const std::string& uri, uint64_t offset, void* dst, size_t n);

 private:
  enum class state { queued, running, done };
  struct run {
    std::string uri;
    byte_range span;
    std::vector<byte_range> reads;  // not taken yet
    uint64_t seq = 0;
    state st = state::queued;
    int waiters = 0;
    bool ok = false;
    std::string bytes;
  };
  using run_ptr = std::shared_ptr<run>;

  void work();
  void fill(run& r);  // the GET, outside the lock
  run_ptr find(const std::string& uri, uint64_t offset, uint64_t n) const;
  void forget(const run_ptr& r);
  void publish() const;

  read_fn read_;
  mutable std::mutex m_;
  std::condition_variable cv_, done_;
  std::deque<run_ptr> queue_;
  std::unordered_map<std::string, std::multimap<uint64_t, run_ptr>> by_uri_;  // by span offset
  std::map<uint64_t, run_ptr> by_seq_;                                         // oldest first
  uint64_t held_ = 0, seq_ = 0;
  size_t threads_ = 0;
};

// The process's read-ahead pool (its threads live as long as the process).
prefetcher& read_ahead_pool();

}  // namespace msomni::data
