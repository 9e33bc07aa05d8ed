// msomni-sched as a real process for a test: started on a number of GPUs with its info file
// in the test's temporary directory, and stopped with SIGTERM once it has said so. The test
// target defines MSOMNI_SCHED_BINARY (and depends on msomni-sched).
#pragma once

#include "core/child_process.hpp"
#include "support/process_runner.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace msomni::testing {

// msomni-sched on `gpus` GPUs, its info file at DIR/info, with the flags `flags`; waits until
// it listens.
inline std::unique_ptr<child_process> start_scheduler(const temp_dir& dir, uint32_t gpus,
                                                      const std::vector<std::string>& flags) {
  std::vector<std::string> args{"--gpus", std::to_string(gpus), "--info-file", (dir.path() / "info").string()};
  args.insert(args.end(), flags.begin(), flags.end());
  auto sched = std::make_unique<child_process>(MSOMNI_SCHED_BINARY, args);
  REQUIRE_MESSAGE(sched->read_until("msomni-sched: " + std::to_string(gpus) + " GPUs", std::chrono::seconds(20)),
                  "msomni-sched did not start: " << sched->log);
  return sched;
}

// Stops msomni-sched (SIGTERM) and waits until it says so; its log then holds every decision.
inline void stop_scheduler(child_process& sched) {
  ::kill(sched.pid(), SIGTERM);
  sched.read_until("msomni-sched: stopped", std::chrono::seconds(10));
}

}  // namespace msomni::testing
