// The scheduler's actor shell: turns job messages into calls on scheduler_core (with the
// time from an injected clock) and the core's commands into messages. The step predictor
// and, for critical jobs, the guest-cost meter (steps taken with guests against steps
// alone) are fed from job_step_report and read once per reservation window. All policy
// stays in the core; msomni-sim drives the same core without this shell.
//
// Messages in (who sends them; idempotent?):
//   job_submit        job -> scheduler; the sender becomes the job's handle; a repeat is ignored.
//                     While recovering (recover_s), held back and taken in order afterwards
//   job_rejoin        job -> a restarted scheduler: it still runs on GPUs the previous
//                     instance gave it; core.adopt keeps it there or requeues it. The sender
//                     becomes the job's handle; a repeat of a known job is ignored
//   job_step_report   running job -> scheduler, per step; a report of an unknown job is dropped
//   job_memory_report job -> scheduler when its memory forecast changed (core.report_memory:
//                     a host's evicts the guests it no longer leaves room for; a guest's raises
//                     its need); an unknown job's is dropped and counted
//   job_released      victim -> scheduler after its drain checkpoint; idempotent (epoch)
//   job_finished      job -> scheduler: finished, failed, or stopped at a checkpoint step (kept
//                     in the core's history of ended jobs; the same id submitted again resumes
//                     a stopped one from that step); idempotent
//   scheduler_status_request  anyone holding the handle; answered with scheduler_status
//                     (queue by class and its bound, jobs by phase, decisions, rejections, the
//                     ended jobs)
//   down of a job     as job_finished, ended "lost" (a job that is gone holds no GPUs)
//   own timers        drain deadline (core.expire), reservation window (forecasts, core.window)
//                     (sent to itself)
// Messages out: preempt_notice for a full preemption, job_command for every other command
// (a hold says why the job waits or does not grow; the cluster's hold, with no job, goes to
// the observer only); a copy of every decision goes to the observer as a job_command.
//
// Metrics (scheduler_env::metrics, optional): the shell is accounted as actor "scheduler";
// after every event it copies the core's counts (jobs by class and phase, GPUs, guests,
// budget-hold windows) into the series, counts each full preemption notice by the victim's
// class and each job's first start with its queue wait, and at each reservation window sets
// the idle-window forecast of every running job the predictor knows (and drops those of jobs
// that no longer run or are gone).
//
// Preemption flow:
//   core: preempt -> preempt_notice{epoch, drain_s} -> victim checkpoints
//     -> job_released{epoch, step} -> GPUs freed -> claimant's start
//     or drain deadline passes     -> job_command{force_release, reason} -> GPUs freed
//   ... later the victim's job_command{start, resume_step} resumes it.
#pragma once

#include "scheduler_types.hpp"
#include "step_predictor.hpp"

#include "core/clock.hpp"
#include "messages/actor_interfaces.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <memory>
#include <string>

namespace msomni::sched {

class scheduler_metrics;  // scheduler_metrics.hpp

// Whoever watches the scheduler's decisions (msomni-sched's log and store): a copy of each.
using decision_observer = caf::typed_actor<caf::reacts_to<msg::job_command>>;

struct scheduler_env {
  const msomni::clock* clock = nullptr;  // required: the core's `now`
  decision_observer observer;            // optional: receives every decision as a job_command
  std::shared_ptr<scheduler_metrics> metrics;  // optional: null = no metrics, nothing counted
  std::string metrics_address;                 // HOST:PORT of the /metrics endpoint, for the status ("": none)
};

struct scheduler_settings {
  topology topo;
  scheduler_params params;
  predict::predictor_params predictor;
  // After a restart: for this long nothing new is placed, so that the jobs still running on
  // the previous instance's GPUs can rejoin (job_rejoin) before those GPUs look free.
  // Submissions meanwhile wait (at most params.queue_capacity of them; past that they are
  // rejected) and are taken in arrival order when it ends. 0: no recovery period.
  double recover_s = 0;
};

msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_settings s, scheduler_env env);

}  // namespace msomni::sched
