// SIGINT and SIGTERM ask a process to stop. The handler only sets one lock-free flag, which
// the process's main loop polls; others may set it too (a lost peer ends a process the same
// way). One flag per process: msomni's processes each have one main loop.
#pragma once

#include <atomic>

namespace msomni::stop_signal {

// Set by SIGINT/SIGTERM once install() ran.
std::atomic<bool>& flag();
// The last stop signal received (SIGINT or SIGTERM), 0 before any. SIGTERM is how a manager
// takes a job's resources back (msomni job on a scheduler's preemption, Slurm, a kill);
// SIGINT is a person's Ctrl-C.
std::atomic<int>& number();
// SIGINT and SIGTERM set flag().
void install();
// SIGINT and SIGTERM take their default action again.
void restore();

}  // namespace msomni::stop_signal
