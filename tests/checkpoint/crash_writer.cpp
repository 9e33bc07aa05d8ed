// Test helper process: saves a few checkpoints into DIR, continuing after the newest one
// there, and can be told to die by SIGKILL at its K-th mutating file operation
// (--kill-op K) or to run under a file-size limit (--fsize-limit BYTES, gives EFBIG like a
// full disk). Every third step is an incremental checkpoint of rank 1 only, followed by a
// merge, so crashes land in full saves, incremental saves, merges and retention alike.
// Prints "committed step-N" per save and "ops N" at the end; exit 3 with the error on failure.
#include "checkpoint_store.hpp"
#include "core/command_line.hpp"
#include "test_states.hpp"

#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace msomni::ckpt;

int main(int argc, char** argv) {
  std::string dir;
  uint64_t seed = 1, steps = 3, floats = 2048, world = 2;
  int64_t kill_op = -1, fsize_limit = -1;  // -1: never, no limit
  namespace limits = msomni::config::limits;
  using msomni::command_line::add_number;
  using msomni::command_line::within;
  CLI::App app{"Test helper: saves checkpoints into DIR, continuing after the newest one there.",
               "ckpt_crash_writer"};
  msomni::command_line::set_conventions(app);
  app.add_option("DIR", dir, "the checkpoint root")->required();
  add_number(app, "--seed", seed, limits::range<uint64_t>{0, UINT64_MAX}, "seeds the states");
  add_number(app, "--steps", steps, limits::range<uint64_t>{0, 1 << 20}, "checkpoints to save");
  add_number(app, "--floats", floats, limits::range<uint64_t>{1, 1 << 28}, "floats per tensor");
  add_number(app, "--world", world, limits::elasticity::replicas, "ranks per checkpoint");
  app.add_option("--kill-op", kill_op, "SIGKILL at the K-th mutating file operation")
      ->type_name("K")
      ->transform(within<int64_t>(0, INT64_MAX));
  app.add_option("--fsize-limit", fsize_limit, "file-size limit in bytes (EFBIG like a full disk)")
      ->type_name("BYTES")
      ->transform(within<int64_t>(0, INT64_MAX));
  if (const auto rc = msomni::command_line::parse(app, argc, argv)) return *rc;
  if (fsize_limit >= 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // so write(2) returns EFBIG instead of killing us
    rlimit rl{static_cast<rlim_t>(fsize_limit), static_cast<rlim_t>(fsize_limit)};
    ::setrlimit(RLIMIT_FSIZE, &rl);
  }
  io_fault_plan faults;
  faults.ops_until_kill = kill_op;
  store_options opts;
  opts.keep = 3;
  opts.codec = {1, 0};
  opts.faults = &faults;
  try {
    checkpoint_store store(dir, opts);
    const auto order = load_order(store.list());
    uint64_t step = order.empty() ? 0 : order.front();
    for (uint64_t i = 0; i < steps; ++i) {
      ++step;
      const auto meta = testing::make_meta(step, static_cast<uint32_t>(world));
      if (step % 3 == 2) {  // step - 1 is then the newest committed checkpoint
        std::map<uint32_t, rank_state> changed;
        changed[1] = testing::make_state(seed, step, 1, floats);
        store.save_incremental(meta, step - 1, changed);
        std::cout << "committed " << checkpoint_dir_name(step) << " incremental" << std::endl;
        store.merge(step);
        std::cout << "merged " << checkpoint_dir_name(step) << std::endl;
      } else {
        std::vector<rank_state> ranks;
        for (uint32_t r = 0; r < world; ++r)
          ranks.push_back(testing::make_state(seed, step, r, floats));
        store.save_full(meta, ranks);
        std::cout << "committed " << checkpoint_dir_name(step) << std::endl;
      }
    }
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << std::endl;
    return 3;
  }
  std::cout << "ops " << faults.ops_done.load() << std::endl;
  return 0;
}
