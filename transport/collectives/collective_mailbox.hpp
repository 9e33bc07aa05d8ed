// Receives collective chunks for every communicator of this process. A chunk lands straight
// in the buffer its collective registered for it (zero-copy through UCX rendezvous); one that
// arrives before its receiver is ready is staged in a bounded pool and copied on wait().
// Keyed by (epoch, sequence, step). Peer-down events fail waits that need that peer.
#pragma once

#include "frame/frame.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace msomni::transport {

struct chunk_key {
  uint64_t epoch = 0;
  uint64_t seq = 0;
  uint64_t step = 0;
  auto operator<=>(const chunk_key&) const = default;
};

// How long wait() polls for a segment, yielding the core, before it sleeps.
inline constexpr std::chrono::microseconds wait_spin{200};

class collective_mailbox {
 public:
  explicit collective_mailbox(size_t max_staged_bytes = size_t{512} << 20)
      : max_staged_bytes_(max_staged_bytes) {}

  // Progress thread: where to put an incoming chunk (nullptr = drop).
  std::byte* buffer_for(const std::string& peer, const frame_header& h);
  void on_done(const std::string& peer, const frame_header& h, std::byte* buffer, bool ok);
  void on_peer_down(const std::string& peer);
  void on_peer_up(const std::string& peer);

  // Collective thread: announce where chunk `key` from `peer` goes, then wait for it.
  void expect(const chunk_key& key, const std::string& peer, std::byte* dest, size_t bytes);
  // Throws collective_error when `peer` is down or the deadline passes.
  void wait(const chunk_key& key, const std::string& peer, std::chrono::steady_clock::time_point deadline);
  // Collective thread, when operation (epoch, seq) fails: its chunks that have not started
  // landing are dropped from now on, and it waits (until `deadline`) for those already
  // landing in its buffers, so a failed collective never leaves UCX writing into memory its
  // caller is about to free. False when some were still landing at the deadline.
  bool withdraw(uint64_t epoch, uint64_t seq, std::chrono::steady_clock::time_point deadline);
  // Drops staged chunks of epochs older than `epoch` (a rebuilt communicator).
  void retire_below(uint64_t epoch);
  // Any thread: fails every current and later wait of an epoch older than `epoch` with
  // collective_error (a newer membership superseded it, e.g. a member elsewhere stalled and
  // the job rolls back), so no rank blocks on a live peer that has already moved on.
  void abort_below(uint64_t epoch, const std::string& why);

  bool is_down(const std::string& peer) const;
  bool superseded(uint64_t epoch) const;  // abort_below() covers it
  size_t staged_bytes() const;
  uint64_t dropped() const;

 private:
  struct slot {
    std::string peer;
    std::byte* dest = nullptr;      // receive straight here (set when expect() came first)
    std::byte* want = nullptr;      // where the collective wants the bytes
    size_t bytes = 0;
    std::vector<std::byte> staged;  // used when the chunk came first
    bool arrived = false;
    bool failed = false;
    bool landing = false;    // buffer_for() handed out a buffer, on_done() not yet called
    bool withdrawn = false;  // its operation failed: erase on_done()
  };
  using slot_map = std::map<chunk_key, slot>;
  void erase_slot(slot_map::iterator it);
  bool is_withdrawn(uint64_t epoch, uint64_t seq) const;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  slot_map slots_;
  std::set<std::pair<uint64_t, uint64_t>> withdrawn_ops_;  // (epoch, seq), bounded below
  std::set<std::string> down_;
  size_t max_staged_bytes_;
  size_t staged_bytes_ = 0;
  uint64_t min_epoch_ = 0;
  uint64_t aborted_below_ = 0;
  std::string abort_reason_;
  uint64_t dropped_ = 0;
};

}  // namespace msomni::transport
