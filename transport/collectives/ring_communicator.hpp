// CPU collectives over UCX: ring all-reduce (reduce-scatter then all-gather, N-1 steps each)
// and ring broadcast. Chunks travel as bulk frames straight into their destination buffer.
// Members are node names in rank order; rebuilding = constructing a new ring with a higher
// epoch (older epochs' frames are then dropped by the mailbox).
//
// When every member runs on one host (same kernel boot, pid namespace and user) and
// `same_host` allows it, the members agree at construction to move the bytes through
// shared memory instead (same_host_collectives.hpp): same results bit for bit, no frames.
// Construction then exchanges two small records with every member, so all members
// construct the communicator together (as they join an epoch).
#pragma once

#include "collectives/communicator.hpp"
#include "hub/transport_hub.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace msomni::transport {

struct ring_options {
  std::chrono::milliseconds timeout = std::chrono::seconds(60);  // for each awaited chunk
  // Same-host members read each other's buffers directly. Off: always UCX frames (the
  // health checks, which exist to exercise the network path).
  bool same_host = true;
};

class same_host_group;

class ring_communicator final : public communicator {
 public:
  ring_communicator(transport_hub& hub, std::vector<std::string> members, uint64_t epoch,
                    ring_options options = {});
  ~ring_communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  uint64_t epoch() const override { return epoch_; }
  // "ucx-ring", or "same-host" when the members agreed to read each other's memory.
  const char* backend() const override;
  void all_reduce(std::span<float> data, reduce_op op) override;
  void broadcast(std::span<std::byte> data, int root) override;
  // The shared memory this member exposes to the others on the same-host path (0 on UCX).
  uint64_t shared_bytes() const;

 private:
  // Queues one segment for the next member as frame step `key` of operation `seq`.
  void send_segment(uint64_t seq, uint64_t key, std::span<const std::byte> bytes,
                    std::function<void(bool)> done);
  const std::string& prev() const;
  const std::string& next() const;
  void all_reduce_frames(uint64_t seq, std::span<float> data);  // the UCX ring's sum
  // Every member's `mine` (the same size everywhere) in rank order, one frame to each member.
  std::vector<std::byte> all_gather_small(std::span<const std::byte> mine);
  // Builds same_host_ when every member offers it and all attach.
  void agree_on_same_host();
  std::string why_stop() const;  // "" while the operation may go on

  transport_hub& hub_;
  std::vector<std::string> members_;
  uint64_t epoch_;
  ring_options options_;
  int rank_ = -1;
  uint64_t seq_ = 0;
  std::vector<float> scratch_;
  std::unique_ptr<same_host_group> same_host_;  // null: UCX frames
};

}  // namespace msomni::transport
