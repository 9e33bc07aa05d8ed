// CPU collectives over UCX: ring all-reduce (reduce-scatter then all-gather, N-1 steps each)
// and ring broadcast. Chunks travel as bulk frames straight into their destination buffer.
// Members are node names in rank order; rebuilding = constructing a new ring with a higher
// epoch (older epochs' frames are then dropped by the mailbox).
#pragma once

#include "collectives/communicator.hpp"
#include "hub/transport_hub.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace msomni::transport {

class ring_communicator final : public communicator {
 public:
  ring_communicator(transport_hub& hub, std::vector<std::string> members, uint64_t epoch,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  uint64_t epoch() const override { return epoch_; }
  const char* backend() const override { return "ucx-ring"; }
  void all_reduce(std::span<float> data, reduce_op op) override;
  void broadcast(std::span<std::byte> data, int root) override;

 private:
  // Queues one segment for the next member as frame step `key` of operation `seq`.
  void send_segment(uint64_t seq, uint64_t key, std::span<const std::byte> bytes,
                    std::function<void(bool)> done);
  const std::string& prev() const;
  const std::string& next() const;

  transport_hub& hub_;
  std::vector<std::string> members_;
  uint64_t epoch_;
  std::chrono::milliseconds timeout_;
  int rank_ = -1;
  uint64_t seq_ = 0;
  std::vector<float> scratch_;
};

}  // namespace msomni::transport
