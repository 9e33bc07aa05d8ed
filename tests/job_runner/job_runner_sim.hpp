// A deterministic simulation of `msomni job`'s runner around the real job_runner_core. The
// harness plays the shell (apps/msomni/job_*.cpp: a poll every 100 ms notices the command's
// end, a failed start ends as 127, find_scheduler and the control endpoint are asked on the
// spot, the job's end gives a command asked to stop 10 s before it is killed) and the world
// around it, on a simulated clock:
//   - a scheduler that submits, starts and co-locates the job, drains it (preempt_notice),
//     shrinks and grows it, evicts it as a guest, force-releases it when a drain runs past
//     its period, adopts or requeues it when it rejoins, and now and then sends a command of
//     any kind out of turn; its messages arrive in order, after a delay;
//   - the scheduler crashing (what it had in flight is lost) and coming back, or not, within
//     the job's reconnect_s, with an unusable info file now and then;
//   - the command: it trains until its last step, fails now and then, cannot start now and
//     then (127), ends some time after SIGTERM (or ignores it), at once on SIGKILL;
//   - msomni-run's control endpoint for in-place resizing: missing, refusing, accepting and
//     then resizing (or getting stuck), its status replies as msomni-run gives them.
// After every event it checks the invariants; a run ends when the job has ended and its
// command with it, or at the horizon (a hang). Everything derives from the seed, so a failing
// seed replays exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::job_runner::sim {

struct options {
  uint64_t seed = 1;
  double reconnect_s = 30;
  bool resize_in_place = false;
  uint32_t gpus_per_replica = 1, max_replicas = 4, min_replicas = 1;
  uint64_t total_steps = 600;   // the command ends by itself (code 0) at this step
  int64_t step_ms = 100;
  int64_t fault_span_ms = 600'000;  // faults and disruptions are planned within this span
  int64_t horizon_ms = 4 * 3'600'000;
  double disruptions = 4;       // expected scheduler decisions against the running job
  double chaos_chance = 0.05;   // a decision is any command, out of turn
  double crash_chance = 0.3;    // the scheduler crashes (up to twice)
  double never_back_chance = 0.15;  // a crashed scheduler does not come back
  double reject_chance = 0.02;
  double guest_chance = 0.25;
  double fail_chance = 0.03;    // a run fails by itself with code 1 or 2
  double launch_fail_chance = 0.03;
  double ignore_term_chance = 0.05;  // a run ignores SIGTERM
  // Breaks the shell on purpose, to show the checks can fail: the command's end is reported
  // to the core as soon as SIGTERM is sent, though the process runs on.
  bool sabotage_end_at_sigterm = false;
  // Breaks the shell the other way: the end of a SIGKILLed command is never reported.
  bool sabotage_drop_killed_end = false;
  // A broken shell: the timer that kills an evicted command past its grace never fires.
  bool sabotage_drop_stop_timer = false;
  bool trace = false;  // a line per event in result::trace
};

struct result {
  bool ended = false;  // the core ended the job
  int code = -1;
  std::string why;
  std::vector<std::string> violations;
  uint64_t events = 0, launches = 0, commands = 0, crashes = 0, rejoins = 0, resubmits = 0, in_place = 0,
           force_releases = 0, chaos = 0, term_ignored = 0;
  // How long commands that ignored SIGTERM ran on before they ended, until the job ended
  // (a SIGKILL of a force release, or by themselves: nothing else follows up an eviction's).
  uint64_t ignored_term_ms = 0;
  std::vector<std::string> trace;
};

result run(const options& o);

// Options for seed `seed`: reconnect_s 0, 3, 30 or 120; resizing in place in half the seeds;
// 1 or 2 GPUs per replica; 200-1200 steps.
options seeded(uint64_t seed);

}  // namespace msomni::job_runner::sim
