// The job side of the co-location scheduler (`msomni job`): an actor that submits a job to
// msomni-sched and runs its command as a child process under the scheduler's decisions,
// the way srun or a torchelastic agent wraps a training command.
//   start / colocate      -> the command starts; MSOMNI_JOB_GPUS, MSOMNI_JOB_REPLICAS,
//                            MSOMNI_RESUME_STEP (and MSOMNI_JOB_HOST, MSOMNI_JOB_SHARE for a
//                            guest) in its environment
//   preempt_notice        -> SIGTERM (msomni-run saves a final checkpoint and ends); when the
//                            command has ended, job_released{epoch, checkpoint step}
//   shrink notice         -> the same, then the command starts again on the GPUs it keeps
//   force_release         -> SIGKILL (the drain period is over)
//   evict_guest           -> SIGTERM; the job waits in the queue again
//   reject                -> the job ends with the scheduler's reason
//   the command ends by itself -> job_finished; the job ends with the command's exit code
//   the command ends, for any reason -> its scratch directory (with --scratch-dir) is removed
//   RUN_DIR/metrics.jsonl (with --run-dir) -> job_step_report per step (step_time_ms,
//                            data_wait_ms, checkpoint_ms), which feeds the scheduler's
//                            step-time predictor
// A scheduler that goes away: the command keeps running while `find_scheduler` is asked
// every second for a restarted one, for up to reconnect_s. A job that still runs on its
// GPUs rejoins it (job_rejoin: adopted there, or requeue -> SIGTERM and wait) and reports
// the newest 200 lines of metrics.jsonl again for the new predictor; a guest is
// stopped and, like a job whose run was ending or that had not started, submits again.
// Past reconnect_s (or with reconnect_s 0) the command is stopped with SIGTERM and the job
// ends with exit code 1.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace msomni::cli {

struct job_spec {
  std::string id;
  uint8_t job_class = 1;  // 0 critical, 1 regular, 2 best-effort
  uint32_t gpus = 1, gpus_per_replica = 0, min_replicas = 1;  // 0 per replica = the whole job
  std::vector<std::string> command;  // argv; command[0] is looked up in PATH
  std::string run_dir;  // optional: checkpoints/latest gives the checkpoint step, metrics.jsonl the steps
  // Optional: MSOMNI_SCRATCH_DIR=scratch_dir/ID for the command, created before each start
  // and removed whenever the command ends (SPEC R7: a preempted job leaves no scratch files
  // on shared storage; what it needs to resume is in its checkpoint).
  std::string scratch_dir;
  double reconnect_s = 300;  // how long to wait for a restarted scheduler (0: end at once)
};

// `find_scheduler` (called on the runner's thread, may block briefly) returns a restarted
// scheduler's handle or an invalid one.
caf::actor spawn_job_runner(caf::actor_system& sys, job_spec spec, caf::actor scheduler,
                            std::function<caf::actor()> find_scheduler,
                            std::function<void(int, const std::string&)> done);

}  // namespace msomni::cli
