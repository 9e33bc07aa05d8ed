// Shared by the crash and disk-full tests: start the helper writer process, and check the
// invariants a checkpoint root must satisfy after any crash.
#pragma once

#include "checkpoint_store.hpp"
#include "support/process_runner.hpp"
#include "test_states.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

extern char** environ;

namespace msomni::ckpt::testing {

constexpr uint64_t crash_seed = 20261201;
constexpr size_t crash_floats = 2048;

// Starts the helper with stdout to /dev/null; returns its pid.
inline pid_t spawn_writer(const std::vector<std::string>& args) {
  std::vector<std::string> all = {MSOMNI_CRASH_WRITER};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return pid;
}

// Raw wait status of the child.
inline int wait_writer(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// After any crash: every committed directory loads in full and holds exactly the state its
// shards claim (each state names its own step); `latest`, when present, names one of them.
// Returns the newest committed step (0 when none).
inline uint64_t check_root_invariants(const checkpoint_store& store, const std::string& ctx) {
  INFO(ctx);
  const auto order = load_order(store.list());
  for (uint64_t step : order) {
    INFO("step " << step);
    verified_checkpoint v;
    REQUIRE_NOTHROW(v = store.load(step));
    for (uint32_t r = 0; r < v.ranks.size(); ++r) {
      const auto own_step = v.ranks[r].get_u64("counter/step");
      REQUIRE(own_step.has_value());
      CHECK(*own_step <= step);
      CHECK(v.ranks[r] == make_state(crash_seed, *own_step, r, crash_floats));
    }
  }
  if (const auto p = store.latest_pointer()) {
    const auto s = parse_checkpoint_dir_name(*p);
    REQUIRE(s.has_value());
    CHECK(std::find(order.begin(), order.end(), *s) != order.end());
  }
  const auto loaded = store.load_latest();
  if (!order.empty()) {
    REQUIRE(loaded.checkpoint.has_value());
    CHECK(loaded.checkpoint->m.meta.step == order.front());
    CHECK(loaded.skipped.empty());
  }
  return order.empty() ? 0 : order.front();
}

inline size_t count_temporaries(const checkpoint_store& store) {
  size_t n = 0;
  for (const auto& e : store.list()) n += classify_entry(e).cls == entry_class::temporary;
  return n;
}

}  // namespace msomni::ckpt::testing
