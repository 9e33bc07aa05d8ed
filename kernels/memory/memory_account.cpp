// memory_account (see memory_account.hpp).
#include "memory/memory_account.hpp"

#include "memory/recycling_pool.hpp"

namespace msomni::kernels {

void memory_account::charge(uint64_t bytes, const std::string& backend) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t used = in_use_.load(std::memory_order_relaxed);
  const uint64_t budget = budget_.load(std::memory_order_relaxed);
  if (budget > 0 && (bytes > budget || used > budget - bytes))
    throw error(backend, bytes, "exceeds the budget of " + std::to_string(budget) + " bytes");
  in_use_.store(used + bytes, std::memory_order_relaxed);
  if (used + bytes > peak_.load(std::memory_order_relaxed)) peak_.store(used + bytes, std::memory_order_relaxed);
}

void memory_account::refund(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_.store(in_use_.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
}

void memory_account::opened(void* p, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[p] = bytes;
  allocations_.fetch_add(1, std::memory_order_relaxed);
}

void memory_account::closed(void* p) noexcept {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = sizes_.find(p);
  if (it == sizes_.end()) return;
  in_use_.store(in_use_.load(std::memory_order_relaxed) - it->second, std::memory_order_relaxed);
  sizes_.erase(it);
}

memory_counts memory_account::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {in_use_.load(std::memory_order_relaxed), peak_.load(std::memory_order_relaxed),
          allocations_.load(std::memory_order_relaxed), sizes_.size(), budget_.load(std::memory_order_relaxed)};
}

uint64_t memory_account::take_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t peak = peak_.load(std::memory_order_relaxed);
  peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return peak;
}

out_of_memory memory_account::error(const std::string& backend, uint64_t requested, const std::string& why,
                                    const std::string& device_note) const {
  const uint64_t used = in_use_.load(std::memory_order_relaxed);
  const uint64_t budget = budget_.load(std::memory_order_relaxed);
  return out_of_memory("out of memory: " + backend + " allocation of " + std::to_string(requested) + " bytes with " +
                           std::to_string(used) + " bytes in use " + why + (device_note.empty() ? "" : " (" + device_note + ")"),
                       requested, used, budget);
}

const std::shared_ptr<memory_account>& process_memory_account() {
  static const auto account = std::make_shared<memory_account>();
  return account;
}

uint64_t batch_memory_in_use(const std::pmr::memory_resource* batch_memory) {
  const auto* pool = dynamic_cast<const recycling_pool*>(batch_memory);
  return pool ? pool->counts().bytes_in_use : 0;
}

}  // namespace msomni::kernels
