// recycling_pool (see recycling_pool.hpp).
#include "memory/recycling_pool.hpp"

#include <new>
#include <string>

namespace msomni::kernels {

namespace {
// Upstream blocks are at least page aligned (cudaHostAlloc, and the CPU upstream asks for
// it), so any alignment a vector asks for up to that is met; sizes are rounded to 256 bytes
// so near sizes share blocks.
constexpr size_t block_alignment = 4096;
size_t rounded(size_t bytes) { return bytes == 0 ? 256 : (bytes + 255) / 256 * 256; }
}  // namespace

recycling_pool::recycling_pool(allocate_fn allocate, release_fn release, size_t keep_per_size)
    : allocate_(std::move(allocate)), release_(std::move(release)), keep_per_size_(keep_per_size) {}

recycling_pool::~recycling_pool() {
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) release_(p);
}

pool_counts recycling_pool::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void* recycling_pool::do_allocate(size_t bytes, size_t alignment) {
  if (alignment > block_alignment)
    throw std::bad_alloc();  // no caller of batch memory asks for more than a page
  const size_t size = rounded(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      --counts_.blocks_kept;
      counts_.bytes_kept -= size;
      counts_.bytes_in_use += size;
      ++counts_.reused;
      return p;
    }
  }
  void* p = allocate_(size);  // outside the lock: it may take milliseconds
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.upstream_allocations;
  counts_.bytes_in_use += size;
  return p;
}

void recycling_pool::do_deallocate(void* p, size_t bytes, size_t) {
  const size_t size = rounded(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_.bytes_in_use -= size;
    auto& blocks = free_[size];
    if (blocks.size() < keep_per_size_) {
      blocks.push_back(p);
      ++counts_.blocks_kept;
      counts_.bytes_kept += size;
      return;
    }
  }
  release_(p);
}

}  // namespace msomni::kernels
