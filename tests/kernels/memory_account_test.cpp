// Exact memory accounting of the CPU backend: every allocate and release moves the bytes in
// use by exactly the (64-byte rounded) size, the peak holds the highest point since the last
// take_peak, and an allocation past the budget throws out_of_memory with the numbers and
// allocates nothing. The CUDA backend the same, where a GPU is usable (else the case is skipped).
#include "device/device_info.hpp"
#include "memory/memory_account.hpp"
#include "ops.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <memory_resource>
#include <string>

using namespace msomni::kernels;

TEST_CASE("cpu ops count the bytes in use, the peak and the allocations exactly") {
  auto account = std::make_shared<memory_account>();
  auto o = make_cpu_ops(1, account);
  CHECK(&o->memory() == account.get());
  CHECK(account->in_use() == 0);
  void* a = o->allocate(4096);
  void* b = o->allocate(100);  // rounded to 128: what the process holds
  CHECK(account->in_use() == 4096 + 128);
  o->release(a);
  CHECK(account->in_use() == 128);
  CHECK(account->peak() == 4096 + 128);
  void* c = o->allocate(0);  // a zero-byte allocation still holds 64 bytes
  const auto counts = account->counts();
  CHECK(counts.in_use_bytes == 128 + 64);
  CHECK(counts.allocations_total == 3);
  CHECK(counts.live_allocations == 2);
  o->release(b);
  o->release(c);
  o->release(nullptr);
  CHECK(account->in_use() == 0);
}

TEST_CASE("take_peak returns the peak since the last take and starts over at what is in use") {
  auto account = std::make_shared<memory_account>();
  auto o = make_cpu_ops(1, account);
  void* keep = o->allocate(1024);
  void* step = o->allocate(8192);
  o->release(step);
  CHECK(account->take_peak() == 1024 + 8192);
  CHECK(account->peak() == 1024);  // the next period starts at what is held
  void* small = o->allocate(64);
  CHECK(account->take_peak() == 1024 + 64);
  o->release(small);
  o->release(keep);
  CHECK(account->take_peak() == 1024 + 64);
  CHECK(account->take_peak() == 0);
}

TEST_CASE("an allocation past the budget throws out_of_memory with the numbers and counts nothing") {
  auto account = std::make_shared<memory_account>();
  account->set_budget(10000);
  auto o = make_cpu_ops(1, account);
  void* a = o->allocate(8192);
  try {
    (void)o->allocate(4096);
    FAIL("no out_of_memory past the budget");
  } catch (const out_of_memory& e) {
    CHECK(e.requested_bytes == 4096);
    CHECK(e.in_use_bytes == 8192);
    CHECK(e.budget_bytes == 10000);
    const std::string what = e.what();
    CHECK(what.find("out of memory") != std::string::npos);
    CHECK(what.find("cpu allocation of 4096 bytes") != std::string::npos);
    CHECK(what.find("8192 bytes in use") != std::string::npos);
    CHECK(what.find("budget of 10000 bytes") != std::string::npos);
  }
  CHECK(account->in_use() == 8192);
  CHECK(account->counts().allocations_total == 1);
  CHECK_NOTHROW(o->release(o->allocate(1792)));  // exactly up to the budget is allowed
  CHECK_THROWS_AS((void)o->allocate(1856), std::runtime_error);  // out_of_memory is a runtime_error
  account->set_budget(0);  // none
  void* big = o->allocate(1 << 20);
  o->release(big);
  o->release(a);
  CHECK(account->in_use() == 0);
}

TEST_CASE("device buffers go through the account, and backends without their own share the process's") {
  auto o = make_cpu_ops(1);
  CHECK(&o->memory() == process_memory_account().get());
  const auto before = process_memory_account()->in_use();
  {
    device_buffer<float> buf(*o, 1000);  // 4000 bytes, rounded to 4032
    CHECK(process_memory_account()->in_use() == before + 4032);
  }
  CHECK(process_memory_account()->in_use() == before);
}

TEST_CASE("the batch memory in use is what the pool has handed out") {
  auto pool = make_batch_memory(backend_kind::cpu, 0);
  CHECK(batch_memory_in_use(pool.get()) == 0);
  void* p = pool->allocate(1000, 64);  // the pool rounds to 256 bytes
  CHECK(batch_memory_in_use(pool.get()) == 1024);
  pool->deallocate(p, 1000, 64);
  CHECK(batch_memory_in_use(pool.get()) == 0);
  CHECK(batch_memory_in_use(std::pmr::get_default_resource()) == 0);
  CHECK(batch_memory_in_use(nullptr) == 0);
}

TEST_CASE("cuda ops count like the CPU's, refuse past the budget, and report the device's own refusal the same way") {
  const auto report = probe_devices();
  if (report.gpus.empty()) MSOMNI_SKIP_TEST("no usable GPU (" + report.status + ")");
  const int device = report.gpus.front().index;
  auto huge = std::make_shared<memory_account>();
  huge->set_budget(uint64_t{1} << 60);
  (void)make_cuda_ops(device, huge);
  CHECK(huge->budget() < (uint64_t{1} << 60));  // lowered to the device's memory
  CHECK(huge->budget() > 0);

  auto account = std::make_shared<memory_account>();
  account->set_budget(1 << 20);
  auto gpu = make_cuda_ops(device, account);
  void* a = gpu->allocate(1000);
  CHECK(account->in_use() == 1000);
  CHECK_THROWS_AS((void)gpu->allocate(1 << 20), out_of_memory);
  CHECK(account->in_use() == 1000);
  gpu->release(a);
  CHECK(account->in_use() == 0);
  account->set_budget(uint64_t{1} << 62);  // past the device: cudaMalloc itself refuses
  try {
    (void)gpu->allocate(uint64_t{1} << 61);
    FAIL("cudaMalloc of 2 EiB succeeded");
  } catch (const out_of_memory& e) {
    const std::string what = e.what();
    CHECK(what.find("out of memory: cuda device") != std::string::npos);
    CHECK(what.find("refused by cudaMalloc") != std::string::npos);
    CHECK(what.find("cudaMemGetInfo") != std::string::npos);
  }
  CHECK(account->in_use() == 0);
  void* after = gpu->allocate(4096);  // the failure left nothing behind
  gpu->release(after);
}
