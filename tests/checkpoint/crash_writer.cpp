// Test helper process: saves a few checkpoints into DIR, continuing after the newest one
// there, and can be told to die by SIGKILL at its K-th mutating file operation
// (--kill-op K) or to run under a file-size limit (--fsize-limit BYTES, gives EFBIG like a
// full disk). Every third step is an incremental checkpoint of rank 1 only, followed by a
// merge, so crashes land in full saves, incremental saves, merges and retention alike.
// Prints "committed step-N" per save and "ops N" at the end; exit 3 with the error on failure.
#include "checkpoint_store.hpp"
#include "test_states.hpp"

#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

using namespace msomni::ckpt;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ckpt_crash_writer DIR [--seed S] [--steps N] [--floats F] [--world W]"
                 " [--kill-op K] [--fsize-limit BYTES]\n";
    return 2;
  }
  const std::string dir = argv[1];
  uint64_t seed = 1, steps = 3, floats = 2048, world = 2;
  int64_t kill_op = -1, fsize_limit = -1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (k == "--seed") seed = v;
    else if (k == "--steps") steps = v;
    else if (k == "--floats") floats = v;
    else if (k == "--world") world = v;
    else if (k == "--kill-op") kill_op = static_cast<int64_t>(v);
    else if (k == "--fsize-limit") fsize_limit = static_cast<int64_t>(v);
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
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
