// The job side of the co-location scheduler (`msomni job`): an actor that submits a job to
// msomni-sched and runs its command as a child process under the scheduler's decisions,
// the way srun or a torchelastic agent wraps a training command.
//   start / colocate      -> the command starts; MSOMNI_JOB_GPUS, MSOMNI_JOB_REPLICAS,
//                            MSOMNI_RESUME_STEP (and MSOMNI_JOB_HOST, MSOMNI_JOB_SHARE for a
//                            guest) in its environment
//   preempt_notice        -> SIGTERM (msomni-run saves a final checkpoint and ends); when the
//                            command has ended, job_released{epoch, checkpoint step}
//   shrink notice         -> the same, then the command starts again on the GPUs it keeps;
//                            with resize_in_place, a scale-down request instead, and
//                            job_released once msomni-run runs on the replicas it keeps
//   resize (grow)         -> with resize_in_place, a scale-up request; else at the next start
//   force_release         -> SIGKILL (the drain period is over)
//   evict_guest           -> SIGTERM; the job waits in the queue again
//   reject                -> the job ends with the scheduler's reason
//   msomni job interrupted -> SIGTERM to the command (SIGKILL 10 s later); once it has ended,
//                            job_finished as it ended (exit 5 or 4: stopped, resumable), and
//                            the job ends with that code, else 1
//   the command ends by itself -> job_finished (its exit code; exit 5: stopped, with the
//                            checkpoint step the scheduler keeps for a resume); the job
//                            ends with the command's exit code
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
// The decisions are job_runner_core's (actors/job_runner); apps/msomni/job_*.cpp carry them
// out with the actor, the child process, the metrics file and msomni-run's control endpoint.
#pragma once

#include "control_file.hpp"
#include "job_spec.hpp"

#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace msomni::cli {

// What the job runs and how: the core's (actors/job_runner/job_spec.hpp).
using job_spec = job_runner::job_spec;

// What the runner reaches: the scheduler, a way to find a restarted one, and the command's
// control endpoint. The two functions are called on the runner's thread and may block
// briefly; they return an invalid handle / nullopt when there is none.
struct job_runner_env {
  msg::scheduler_actor scheduler;
  std::function<msg::scheduler_actor()> find_scheduler;
  std::function<std::optional<control_endpoint>(const std::string& run_dir)> find_control;  // resize_in_place
};

// The runner as `msomni job` holds it: the scheduler's messages, and (interrupt_atom, signal).
using interrupt_atom = caf::atom_constant<caf::atom("jrintr")>;
using job_runner_actor = msg::job_actor::extend<caf::reacts_to<interrupt_atom, int>>;

job_runner_actor spawn_job_runner(caf::actor_system& sys, job_spec spec, job_runner_env env,
                            std::function<void(int, const std::string&)> done);
// msomni job was interrupted by `sig` (Ctrl-C's SIGINT, or SIGTERM): the command's group gets
// the same signal and its grace, the scheduler hears how it ended (a stopped one stays
// resumable), then `done` is called.
void interrupt_job_runner(const job_runner_actor& runner, int sig);

}  // namespace msomni::cli
