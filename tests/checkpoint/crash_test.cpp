// Crash safety: a helper writer process is killed with SIGKILL at seeded points (its K-th
// mutating file operation, so a failing seed replays exactly) and at seeded wall-clock
// delays. After every kill the root must hold only complete, verifiable checkpoints, never
// lose the newest committed one, and the next save must leave no temporaries behind.
#include "crash_support.hpp"

#include <chrono>
#include <thread>

using namespace msomni::ckpt;
using namespace msomni::ckpt::testing;

namespace {

// Mutating operations of one helper run from an empty root (later runs also retire old
// checkpoints, so they take more): kill points drawn below this always land mid-run.
uint64_t calibrate_ops() {
  msomni::testing::temp_dir tmp;
  const auto r = msomni::testing::run_command(
      std::string(MSOMNI_CRASH_WRITER) + " " + tmp.path().string() + " --steps 3 --floats " +
      std::to_string(crash_floats) + " --seed " + std::to_string(crash_seed));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto at = r.output.find("ops ");
  REQUIRE(at != std::string::npos);
  return std::stoull(r.output.substr(at + 4));
}

void next_save_leaves_no_temporaries(checkpoint_store& store, uint64_t newest,
                                     const std::string& ctx) {
  INFO(ctx);
  std::vector<rank_state> ranks = {make_state(crash_seed, newest + 1, 0, crash_floats),
                                   make_state(crash_seed, newest + 1, 1, crash_floats)};
  store.save_full(make_meta(newest + 1, 2), ranks);
  CHECK(count_temporaries(store) == 0);
  CHECK(check_root_invariants(store, ctx + " after the next save") == newest + 1);
}

}  // namespace

TEST_CASE("SIGKILL at seeded file operations never leaves a torn checkpoint loadable") {
  const uint64_t ops = calibrate_ops();
  REQUIRE(ops > 20);
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  auto rng = msomni::rng_stream::derive(crash_seed, "ckpt.crash.kill_op");
  constexpr int trials = 60;
  int killed = 0;
  uint64_t newest = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const uint64_t kill_op = rng.below(ops);
    const std::string ctx = "trial " + std::to_string(trial) + " (seed " +
                            std::to_string(crash_seed) + ", --kill-op " + std::to_string(kill_op) + ")";
    auto writer = spawn_writer({tmp.path().string(), "--steps", "3", "--floats", std::to_string(crash_floats), "--seed",
                                std::to_string(crash_seed), "--kill-op", std::to_string(kill_op)});
    const auto st = *writer.wait();
    INFO(ctx);
    const bool was_killed = st.signal == SIGKILL;
    REQUIRE((was_killed || st.shell_code() == 0));
    killed += was_killed;
    const uint64_t now = check_root_invariants(store, ctx);
    CHECK(now >= newest);  // a crash never loses the newest committed checkpoint
    newest = now;
    if (trial % 2 == 1) {  // let half the crashes pile up before the next (helper) save
      next_save_leaves_no_temporaries(store, newest, ctx);
      newest += 1;
    }
  }
  MESSAGE(killed << " of " << trials << " helper runs were killed mid-save");
  CHECK(killed >= 50);
}

TEST_CASE("SIGKILL at seeded wall-clock delays") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  auto rng = msomni::rng_stream::derive(crash_seed, "ckpt.crash.delay");
  uint64_t newest = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const auto delay_us = rng.below(20000);
    const std::string ctx = "timed trial " + std::to_string(trial) + " delay " +
                            std::to_string(delay_us) + " us";
    auto writer = spawn_writer({tmp.path().string(), "--steps", "4", "--floats", "8192", "--seed", std::to_string(crash_seed)});
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    writer.signal(SIGKILL);
    writer.wait();
    // --floats differs from crash_floats here, so check structure, not content.
    const auto order = load_order(store.list());
    INFO(ctx);
    for (uint64_t step : order) CHECK_NOTHROW(store.load(step));
    CHECK((order.empty() ? 0 : order.front()) >= newest);
    newest = order.empty() ? 0 : order.front();
  }
}
