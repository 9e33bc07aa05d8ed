// A memory resource that keeps freed blocks for reuse by the next allocation of the same
// size, over an upstream that is slow to allocate from (page-locked host memory takes a
// system call and a page-table walk per block). Micro-batches of one shape are the same size
// every time, so steady training allocates nothing. At most `keep_per_size` free blocks of a
// size are kept; more go back upstream. Thread-safe: one thread may allocate what another
// frees.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory_resource>
#include <mutex>
#include <utility>
#include <vector>

namespace msomni::kernels {

struct pool_counts {
  size_t upstream_allocations = 0;  // blocks ever taken from upstream
  size_t reused = 0;                // allocations served from a kept block
  size_t blocks_kept = 0;           // free blocks held now
  size_t bytes_kept = 0;
  size_t bytes_in_use = 0;
};

class recycling_pool final : public std::pmr::memory_resource {
 public:
  using allocate_fn = std::function<void*(size_t bytes)>;  // throws on failure
  using release_fn = std::function<void(void* p)>;
  recycling_pool(allocate_fn allocate, release_fn release, size_t keep_per_size = 16);
  ~recycling_pool() override;
  recycling_pool(const recycling_pool&) = delete;
  recycling_pool& operator=(const recycling_pool&) = delete;

  pool_counts counts() const;

 private:
  void* do_allocate(size_t bytes, size_t alignment) override;
  void do_deallocate(void* p, size_t bytes, size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  allocate_fn allocate_;
  release_fn release_;
  const size_t keep_per_size_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // by rounded size
  pool_counts counts_;
};

}  // namespace msomni::kernels
