// A full disk during a save leaves the previous checkpoint intact and says so clearly:
// injected ENOSPC at every stage of a save, a real 1 MiB tmpfs when we may mount one, and
// a file-size limit (EFBIG) in a child process, which needs no privileges.
#include "checkpoint_error.hpp"
#include "crash_support.hpp"

#include <sys/mount.h>

using namespace msomni::ckpt;
using namespace msomni::ckpt::testing;

namespace {

std::vector<rank_state> two_ranks(uint64_t step, size_t floats) {
  return {make_state(crash_seed, step, 0, floats), make_state(crash_seed, step, 1, floats)};
}

}  // namespace

TEST_CASE("injected ENOSPC at any byte of a save keeps the previous checkpoint") {
  msomni::testing::temp_dir tmp;
  io_fault_plan faults;
  checkpoint_store store(tmp.path(), {3, {}, &faults});
  store.save_full(make_meta(1, 2), two_ranks(1, crash_floats));
  // Budgets that fail inside shard 0, inside shard 1, and in the manifest after both shards.
  uint64_t shard_bytes = 0;
  shard_encoder enc(store.options().codec);
  for (const auto& s : two_ranks(2, crash_floats)) {
    memory_sink sink;
    shard_bytes += enc.encode(s, 0, 2, sink).bytes;
  }
  const int64_t after_shards = static_cast<int64_t>(shard_bytes) + 10;
  for (int64_t budget : {int64_t{0}, int64_t{1}, int64_t{100}, int64_t{5000}, int64_t{20000}, after_shards}) {
    INFO("byte budget " << budget);
    faults.bytes_until_fail = budget;
    try {
      store.save_full(make_meta(2, 2), two_ranks(2, crash_floats));
      FAIL("save did not fail");
    } catch (const checkpoint_error& e) {
      CHECK(e.sys_errno() == ENOSPC);
      CHECK(std::string(e.what()).find("No space left on device") != std::string::npos);
      CHECK(std::string(e.what()).find(tmp.path().string()) != std::string::npos);
    }
    faults.bytes_until_fail = -1;
    CHECK(check_root_invariants(store, "after ENOSPC") == 1);
    CHECK(store.latest_pointer() == "step-00000001");
  }
  store.save_full(make_meta(2, 2), two_ranks(2, crash_floats));
  CHECK(count_temporaries(store) == 0);
  CHECK(check_root_invariants(store, "after a save that fits") == 2);
}

TEST_CASE("a real full file system (1 MiB tmpfs - needs root - else skipped loudly)") {
  msomni::testing::temp_dir tmp;
  if (::mount("tmpfs", tmp.path().c_str(), "tmpfs", 0, "size=1m") != 0) {
    MESSAGE("SKIPPED: cannot mount a tmpfs here (" << std::strerror(errno)
                                                   << "); the EFBIG and injected tests cover it");
    return;
  }
  {
    checkpoint_store store(tmp.path(), {3, {1, 0}, nullptr});
    store.save_full(make_meta(1, 2), two_ranks(1, crash_floats));
    try {
      store.save_full(make_meta(2, 2), two_ranks(2, 200000));  // ~1.6 MB of noise
      FAIL("save did not fail");
    } catch (const checkpoint_error& e) {
      MESSAGE("tmpfs save failed as expected: " << std::string(e.what()));
      CHECK(e.sys_errno() == ENOSPC);
    }
    CHECK(check_root_invariants(store, "tmpfs full") == 1);
    store.cleanup();  // frees the partial staging directory
    store.save_full(make_meta(2, 2), two_ranks(2, crash_floats));
    CHECK(count_temporaries(store) == 0);
    CHECK(load_order(store.list()).front() == 2);
  }
  CHECK(::umount(tmp.path().c_str()) == 0);
}

TEST_CASE("EFBIG under a file-size limit in a child process keeps the previous checkpoint") {
  msomni::testing::temp_dir tmp;
  {
    checkpoint_store store(tmp.path());
    store.save_full(make_meta(1, 2), two_ranks(1, crash_floats));
  }
  const auto r = msomni::testing::run_command(std::string(MSOMNI_CRASH_WRITER) + " " +
                                              tmp.path().string() +
                                              " --steps 1 --floats 100000 --fsize-limit 65536");
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.output.find("File too large") != std::string::npos);
  CHECK(r.output.find("shard-0000") != std::string::npos);
  checkpoint_store store(tmp.path());
  CHECK(check_root_invariants(store, "after EFBIG") == 1);
}
