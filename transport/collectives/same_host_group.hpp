// The members of one communicator that share a host. Each publishes, in a one-page shared
// mapping of its own (an anonymous memfd), how far it has got in the current collective and
// where its buffer is. It also shares areas (memfds too) where it puts its input for the
// others to sum and the share it summed; the others map the page and the areas read-only
// and copy with plain loads, with no UCX frames and no handshakes. A broadcast's receivers
// copy straight out of the root's buffer with process_vm_readv. No file or name is created,
// so nothing is left to clean up: a page or an area goes with the last process that maps it.
#pragma once

#include "collectives/host_identity.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace msomni::transport {

class same_host_group {
 public:
  // The stages of one step of a collective a member announces, in order.
  enum class stage : uint8_t { entered, reduced, finished };
  // A member's shared areas: the part of its input the others reduce, its reduced chunk, and
  // (small buffers) its whole input, in one area for even steps and one for odd steps.
  enum class area : uint8_t { input, reduced, whole_even, whole_odd };
  static constexpr size_t area_count = 4;

  // Creates this member's page. Throws collective_error when the kernel refuses.
  same_host_group();
  ~same_host_group();
  same_host_group(const same_host_group&) = delete;
  same_host_group& operator=(const same_host_group&) = delete;

  int page_fd() const { return page_fd_; }
  uint64_t page_token() const;
  uint64_t token_address() const;  // of the token, in this process

  // Maps every other member's page (records in rank order, `rank` is this member). "" or
  // why not (then nothing is mapped).
  std::string attach(std::span<const host_identity> members, int rank);
  // Once every member has attached: this member's descriptor is no longer needed.
  void close_page_fd();

  int rank() const { return rank_; }
  uint64_t shared_bytes() const;  // this member's control page and areas
  int size() const { return static_cast<int>(peers_.size()); }

  // Steps number every synchronised unit of work in the same order on every member (the
  // members run the same collectives with the same sizes).
  uint64_t next_step() { return ++step_; }
  // Announces step `step` with this member's buffer (address and length), then the stages
  // it completes. A member may be one step ahead of another (a step with one
  // synchronisation), so even and odd steps keep their own address and length.
  void publish(uint64_t step, const void* addr, size_t bytes);
  void mark(stage s, uint64_t step);
  // Valid once `member` has entered `step` (wait first).
  uintptr_t address_of(int member, uint64_t step) const;
  uint64_t bytes_of(int member, uint64_t step) const;
  // This member's area `a`, shared with the others: at least `bytes`, grown (a new memfd)
  // when smaller. Call only while nobody reads it.
  std::byte* own_area(area a, size_t bytes);
  // `member`'s area `a`, mapped read-only (again when it grew). Throws collective_error.
  const std::byte* area_of(int member, area a);

  // Until `member` has reached stage `s` of step `step`: polls, yielding the core, then
  // sleeps in short steps. `abort_reason` is asked now and then; a non-empty answer, the
  // deadline or the member's process being gone throws collective_error.
  void wait(int member, stage s, uint64_t step, std::chrono::steady_clock::time_point deadline,
            const std::function<std::string()>& abort_reason) const;
  // Copies `bytes` at `from` in `member`'s address space to `to`. Throws collective_error.
  void read(int member, uintptr_t from, void* to, size_t bytes) const;

  struct page;  // the shared layout (same_host_group.cpp)

 private:
  struct region {
    int fd = -1;  // own region only
    std::byte* base = nullptr;
    size_t capacity = 0;
    uint64_t generation = 0;
  };
  struct peer {
    pid_t pid = 0;
    const page* view = nullptr;  // mapped read-only; own slot: our page
    region areas[area_count];    // a peer's areas as mapped here
  };
  static void unmap(region& r);
  int page_fd_ = -1;
  uint64_t step_ = 0;
  region areas_[area_count];
  page* own_ = nullptr;
  int rank_ = -1;
  std::vector<peer> peers_;
};

}  // namespace msomni::transport
