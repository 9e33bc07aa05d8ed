// Exact accounting of one compute backend's memory: every ops::allocate and ops::release of a
// process goes through one account, so the bytes in use, the peak since the last take_peak()
// (the rank takes it once per optimizer step) and the allocation count are exact, not
// sampled from the allocator or the OS. A budget (0 = none) turns an allocation past it into
// a reported kernels::out_of_memory before anything is allocated: on the CPU that is the only
// limit there is, on a GPU it comes before the device's own.
//
// Thread-safe: the training thread allocates, a sampling actor reads the numbers; reads are
// relaxed atomics, changes take a lock (they also keep the pointer -> size map release needs).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace msomni::kernels {

// An allocation the backend could not make: past the budget, or refused by the device.
// what() names the backend, the numbers and why; the numbers are also fields.
class out_of_memory : public std::runtime_error {
 public:
  out_of_memory(const std::string& what, uint64_t requested_bytes, uint64_t in_use_bytes, uint64_t budget_bytes)
      : std::runtime_error(what), requested_bytes(requested_bytes), in_use_bytes(in_use_bytes), budget_bytes(budget_bytes) {}
  uint64_t requested_bytes;
  uint64_t in_use_bytes;
  uint64_t budget_bytes;  // 0: no budget (the device itself refused)
};

struct memory_counts {
  uint64_t in_use_bytes = 0;
  uint64_t peak_bytes = 0;         // since the last take_peak()
  uint64_t allocations_total = 0;  // successful allocations ever
  uint64_t live_allocations = 0;
  uint64_t budget_bytes = 0;       // 0: none
};

class memory_account {
 public:
  memory_account() = default;
  memory_account(const memory_account&) = delete;
  memory_account& operator=(const memory_account&) = delete;

  // 0 lifts the budget. Allocations already made stay, even when they exceed a new budget.
  void set_budget(uint64_t bytes) { budget_.store(bytes, std::memory_order_relaxed); }
  uint64_t budget() const { return budget_.load(std::memory_order_relaxed); }

  // Before an allocation of `bytes` by `backend` ("cpu", "cuda device 0"): counts them as in
  // use, or throws out_of_memory (counting nothing) when they would take the account past its
  // budget.
  void charge(uint64_t bytes, const std::string& backend);
  // The allocation charged for could not be made.
  void refund(uint64_t bytes);
  // The allocation charged for is `p`.
  void opened(void* p, uint64_t bytes);
  // `p` is released: its bytes are no longer in use. Unknown pointers (and null) count nothing.
  void closed(void* p) noexcept;

  memory_counts counts() const;
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // The peak since the last call, and a new period starting at what is in use now.
  uint64_t take_peak();

  // The error an allocation past the budget (or refused by the device) raises: "out of
  // memory: cpu allocation of R bytes with U bytes in use exceeds the budget of B bytes".
  // `device_note` is appended (the device's free and total memory on a GPU).
  out_of_memory error(const std::string& backend, uint64_t requested, const std::string& why,
                      const std::string& device_note = "") const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, uint64_t> sizes_;
  std::atomic<uint64_t> in_use_{0}, peak_{0}, allocations_{0}, budget_{0};
};

// The process's account: every backend made without an account of its own counts into it
// (a rank process has one model on one device; its samples read this). Never null.
const std::shared_ptr<memory_account>& process_memory_account();

// Bytes of packed batches the data pipeline holds now in `batch_memory` (a pool from
// make_batch_memory; 0 for any other resource, or null).
uint64_t batch_memory_in_use(const std::pmr::memory_resource* batch_memory);

}  // namespace msomni::kernels
