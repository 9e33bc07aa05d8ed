// The batch memory pool: blocks come back to the next allocation of their size, at most the
// kept number per size, counts say what happened; a pmr vector keeps the pool it was built in.
#include "memory/recycling_pool.hpp"
#include "ops.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <vector>

using namespace msomni::kernels;

namespace {
struct upstream_log {
  int allocations = 0;
  int releases = 0;
};
recycling_pool counting_pool(upstream_log& log, size_t keep) {
  return recycling_pool(
      [&log](size_t bytes) {
        ++log.allocations;
        return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
      },
      [&log](void* p) {
        ++log.releases;
        std::free(p);
      },
      keep);
}
}  // namespace

TEST_CASE("batch memory: a freed block serves the next allocation of its size, not another size") {
  upstream_log log;
  {
    auto pool = counting_pool(log, 4);
    void* a = pool.allocate(1 << 20, alignof(float));
    pool.deallocate(a, 1 << 20, alignof(float));
    void* b = pool.allocate(1 << 20, alignof(float));
    CHECK(b == a);  // reused
    void* c = pool.allocate(1 << 19, alignof(float));
    CHECK(c != a);  // another size: from upstream
    const auto n = pool.counts();
    CHECK(n.upstream_allocations == 2);
    CHECK(n.reused == 1);
    CHECK(n.bytes_in_use == (1u << 20) + (1u << 19));
    pool.deallocate(b, 1 << 20, alignof(float));
    pool.deallocate(c, 1 << 19, alignof(float));
    CHECK(pool.counts().blocks_kept == 2);
    CHECK(log.releases == 0);
  }
  CHECK(log.releases == 2);  // the pool hands kept blocks back when it goes
}

TEST_CASE("batch memory: at most keep_per_size free blocks of a size are kept") {
  upstream_log log;
  auto pool = counting_pool(log, 2);
  std::vector<void*> held;
  for (int i = 0; i < 5; ++i) held.push_back(pool.allocate(4096, 8));
  for (void* p : held) pool.deallocate(p, 4096, 8);
  CHECK(pool.counts().blocks_kept == 2);
  CHECK(log.releases == 3);
  CHECK(pool.counts().bytes_in_use == 0);
}

TEST_CASE("batch memory: steady batches of one shape allocate from upstream once per live batch") {
  auto memory = make_batch_memory(backend_kind::cpu, 0);
  auto* pool = dynamic_cast<recycling_pool*>(memory.get());
  REQUIRE(pool != nullptr);
  std::set<const float*> addresses;
  for (int step = 0; step < 20; ++step) {
    std::pmr::vector<float> a(100000, 1.0f, memory.get());
    std::pmr::vector<float> b(100000, 2.0f, memory.get());  // two batches alive at once
    addresses.insert(a.data());
    addresses.insert(b.data());
    // Moving a pmr vector keeps its memory: what the data stage hands to the trainer.
    std::pmr::vector<float> moved(std::move(a));
    CHECK(moved.get_allocator().resource() == memory.get());
  }
  CHECK(pool->counts().upstream_allocations == 2);
  CHECK(addresses.size() == 2);
}

TEST_CASE("batch memory: CUDA memory without a GPU backend or device is refused with the reason") {
  if (cuda_compiled()) {
    // With CUDA compiled in, a device index past the last is refused.
    CHECK_THROWS_WITH_AS(make_batch_memory(backend_kind::cuda, 1 << 20), doctest::Contains("pinned host memory"),
                         std::runtime_error);
  } else {
    CHECK_THROWS_WITH_AS(make_batch_memory(backend_kind::cuda, 0), doctest::Contains("no CUDA backend"),
                         std::runtime_error);
  }
}
