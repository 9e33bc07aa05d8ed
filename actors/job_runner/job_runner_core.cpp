// job_runner_core (see job_runner_core.hpp): the scheduler's commands and the command's end.
// A lost scheduler is in job_runner_rejoin.cpp, in-place resizing in job_runner_resize.cpp.
#include "job_runner_core.hpp"

#include "scheduler_types.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

namespace msomni::job_runner {

using sched::command_kind;

std::string join(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t g : v) s += (s.empty() ? "" : ",") + std::to_string(g);
  return s;
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

job_runner_core::job_runner_core(job_spec spec) : spec_(std::move(spec)) {}

actions job_runner_core::start(time_point now) {
  submitted_at_ = now;
  return {tell_scheduler{submission(now)}, say{"submitted (" + std::to_string(spec_.gpus) + " GPUs)"}};
}

actions job_runner_core::on_quiet_check() const {
  if (heard_) return {};
  return {say{"no decision yet: waiting in the scheduler's queue (or the token in the info file is stale)"}};
}

void job_runner_core::launch_run(uint64_t resume_step, const std::string& host, double share, actions& out) {
  running_ = true;
  why_ = stopping::no;
  ++run_;
  out.push_back(launch{gpus_, replicas_, resume_step, host, share});
}

// The step a start resumes from: the scheduler's (a preempted or stopped job's report), unless
// the run directory's newest checkpoint says otherwise (msomni-run resumes from that one).
static uint64_t resume_step_of(const msg::job_command& c, std::optional<uint64_t> checkpoint_step, actions& out) {
  if (!checkpoint_step || *checkpoint_step == c.resume_step) {
    if (c.resume_step > 0) out.push_back(say{"resumes from checkpoint step " + std::to_string(c.resume_step)});
    return c.resume_step;
  }
  const std::string ckpt = std::to_string(*checkpoint_step);
  if (c.resume_step == 0)
    out.push_back(say{"resumes from checkpoint step " + ckpt + " (the run directory's newest; the scheduler knew none)"});
  else if (*checkpoint_step == 0)
    out.push_back(say{"the scheduler's resume step is " + std::to_string(c.resume_step) +
                      ", but the run directory has no checkpoint: starts from step 0"});
  else
    out.push_back(say{"resumes from checkpoint step " + ckpt + " (the run directory's newest, not the scheduler's " +
                      std::to_string(c.resume_step) + ")"});
  return *checkpoint_step;
}

void job_runner_core::start_run(const msg::job_command& c, std::optional<uint64_t> checkpoint_step, actions& out) {
  guest_ = c.kind == command_kind::colocate;
  gpus_ = c.gpus;
  replicas_ = c.replicas;
  out.push_back(say{std::string(guest_ ? "started as a guest of " + c.host : "started") + " on gpus " + join(gpus_) +
                    " (" + c.reason + ")"});
  const uint64_t resume = resume_step_of(c, checkpoint_step, out);
  launch_run(resume, guest_ ? c.host : "", c.share, out);
}

void job_runner_core::stop(stop_signal sig, stopping why, actions& out) {
  why_ = why;
  out.emplace_back(std::in_place_type<signal_command>, signal_command{sig});
  // An eviction has no drain deadline of the scheduler's behind it (a drain and a shrink end
  // in a force release; the job's end in finish_job's grace): a command that ignores SIGTERM
  // would keep the GPUs it was asked to give back.
  if (sig == stop_signal::terminate && why == stopping::evicted)
    out.push_back(kill_if_still_running{command_stop_grace, run_});
}

actions job_runner_core::on_stop_overdue(uint64_t run) {
  actions out;
  // It ended, or this is another run. A stop asked for since (a drain of the start waiting
  // behind it) does not lift the eviction: the run was asked to give its GPUs back.
  if (over_ || !running_ || run != run_) return out;
  out.push_back(say{"the command did not stop within " +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(command_stop_grace).count()) +
                    " s of SIGTERM; killing it"});
  out.emplace_back(std::in_place_type<signal_command>, signal_command{stop_signal::kill});
  return out;
}

void job_runner_core::finish(int code, std::string why, actions& out) {
  if (over_) return;
  over_ = true;
  out.push_back(finish_job{code, std::move(why), running_ && why_ != stopping::no});
}

void job_runner_core::keep_replicas_only(uint32_t replicas) {
  gpus_.resize(std::min<size_t>(gpus_.size(), size_t{replicas} * per_replica(spec_)));
  replicas_ = replicas;
}

// The scheduler shrinks or takes back the run it started while the last one was still
// ending (that run has not launched): `keep` replicas of it (0: none) still start.
void job_runner_core::keep_of_deferred(uint32_t keep) {
  if (keep == 0) return deferred_start_.reset();
  auto& g = deferred_start_->gpus;
  g.resize(std::min<size_t>(g.size(), size_t{keep} * per_replica(spec_)));
  deferred_start_->replicas = keep;
}

actions job_runner_core::on_interrupted(stop_signal forward) {
  actions out;
  if (interrupted_ || over_) return out;
  interrupted_ = true;
  deferred_start_.reset();
  resize_to_ = 0;  // an in-place resize under way is dropped with the run
  if (!running_) {
    finish(1, "interrupted", out);
    return out;
  }
  out.push_back(say{std::string("interrupted: stopping the command (") +
                    (forward == stop_signal::interrupt ? "SIGINT" : "SIGTERM") + "; SIGKILL after " +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(command_stop_grace).count()) +
                    " s)"});
  why_ = stopping::no;  // it ends as the job's end, whatever was asked of it before
  out.emplace_back(std::in_place_type<signal_command>,
                   signal_command{forward == stop_signal::interrupt ? stop_signal::interrupt : stop_signal::terminate});
  out.push_back(kill_if_still_running{command_stop_grace, run_});
  return out;
}

std::string job_runner_core::step_text(std::optional<uint64_t> step) const {
  if (step) return "checkpoint step " + std::to_string(*step);
  if (spec_.run_dir.empty()) return "checkpoint step unknown (no --run-dir: msomni job cannot see its checkpoints)";
  return "checkpoint step unknown (" + spec_.run_dir +
         " has neither checkpoints/latest nor a metrics.jsonl line with checkpoint_ms > 0 and its step)";
}

// The command ended after msomni job was interrupted: the scheduler hears how, and the job ends.
void job_runner_core::end_interrupted(int code, std::optional<uint64_t> step, actions& out) {
  const bool stopped = stopped_with_checkpoint(code);
  if (registered_)
    out.push_back(tell_scheduler{msg::job_finished{spec_.id, code, stopped, stopped ? step.value_or(0) : 0}});
  if (stopped)
    finish(code, "interrupted; stopped (not finished): resumable from " + step_text(step) +
                     "; run the same msomni job again to resume", out);
  else
    finish(1, "interrupted (the command ended with " + std::to_string(code) + ")", out);
}

actions job_runner_core::on_command(const msg::job_command& c, time_point now, std::optional<uint64_t> checkpoint_step) {
  actions out;
  heard_ = true;
  if (interrupted_) return out;  // the job is ending
  if (c.epoch < epoch_) return out;  // stale
  epoch_ = c.epoch;
  switch (c.kind) {
    case command_kind::start:
    case command_kind::colocate:
      if (running_) {  // the previous run is still ending (an eviction needs no answer)
        deferred_start_ = c;
        out.push_back(say{"starts again once the previous run has ended"});
        break;
      }
      start_run(c, checkpoint_step, out);
      break;
    case command_kind::preempt:  // a shrink notice: in place, or the command restarts smaller
      keep_replicas_ = c.keep_replicas;
      out.push_back(say{"shrink to " + std::to_string(c.keep_replicas) + " replicas within " + seconds_text(c.drain_s) +
                        " (" + c.reason + ")"});
      if (deferred_start_) {  // it starts smaller; released once the last run has ended
        keep_of_deferred(c.keep_replicas);
        why_ = stopping::drain;
        break;
      }
      resize(c.keep_replicas, true, c.drain_s, c.epoch, now, out);
      break;
    case command_kind::force_release:
      out.push_back(say{"force release (" + c.reason + ")"});
      if (deferred_start_) {
        keep_of_deferred(c.keep_replicas);
      } else if (c.keep_replicas > 0) {  // a shrink's: the scheduler keeps the run on them, so it restarts there
        keep_replicas_ = c.keep_replicas;
        stop(stop_signal::kill, stopping::shrink, out);
        break;
      }
      stop(stop_signal::kill, stopping::killed, out);
      break;
    case command_kind::evict_guest:
      deferred_start_.reset();
      out.push_back(say{"evicted as a guest (" + c.reason + ")"});
      stop(stop_signal::terminate, stopping::evicted, out);
      break;
    case command_kind::resize: {  // a grow: the scheduler gave the GPUs, the job's from now on
      if (deferred_start_) {  // of the run that has not started yet: it starts on them
        deferred_start_->gpus = c.gpus;
        deferred_start_->replicas = c.replicas;
        out.push_back(say{"grown to " + std::to_string(c.replicas) + " replicas: applies at the next start"});
        break;
      }
      // A shrink in place under way (of a scheduler the job rejoined since) gives way to it.
      const bool shrinking = resize_to_ != 0 && resize_is_shrink_;
      const uint32_t from = shrinking ? resize_to_ : replicas_;
      if (shrinking) resize_to_ = 0;
      if (why_ == stopping::shrink) keep_replicas_ = c.replicas;  // the restart coming runs on them all
      gpus_ = c.gpus;
      replicas_ = c.replicas;
      out.push_back(say{"grow from " + std::to_string(from) + " to " + std::to_string(c.replicas) + " replicas (" +
                        c.reason + ")"});
      if (c.replicas > from) resize(c.replicas, false, 0, c.epoch, now, out);
      break;
    }
    case command_kind::set_share:
      break;
    case command_kind::hold:  // why it waits or does not grow: said, nothing to do
      out.push_back(say{"held: " + c.reason});
      break;
    case command_kind::reject:
      finish(3, "rejected: " + c.reason, out);
      break;
    case command_kind::adopted:
      out.push_back(say{"keeps gpus " + join(c.gpus) + " (" + c.reason + ")"});
      break;
    case command_kind::requeue:
      deferred_start_.reset();
      out.push_back(say{"stops and waits in the queue (" + c.reason + ")"});
      stop(stop_signal::terminate, stopping::evicted, out);
      break;
  }
  return out;
}

actions job_runner_core::on_preempt_notice(const msg::preempt_notice& n, std::optional<uint64_t> checkpoint_step) {
  actions out;
  heard_ = true;
  if (interrupted_ || n.epoch < epoch_) return out;
  epoch_ = n.epoch;
  out.push_back(say{"preempted: checkpoint and release within " + seconds_text(n.drain_s) + " (" + n.reason + ")"});
  deferred_start_.reset();  // a run started while the last one ended is taken back with it
  if (running_) stop(stop_signal::terminate, stopping::drain, out);
  else out.push_back(tell_scheduler{msg::job_released{spec_.id, n.epoch, checkpoint_step.value_or(0)}});
  return out;
}

// The command ended: what that means depends on why it was asked to stop.
actions job_runner_core::on_command_ended(int code, std::optional<uint64_t> step, time_point now) {
  actions out;
  running_ = false;
  resize_to_ = 0;
  if (interrupted_) {
    end_interrupted(code, step, out);
    return out;
  }
  switch (why_) {
    case stopping::drain:
    case stopping::shrink:
      if (!registered_) {  // the scheduler that asked is gone: queue again at the next one
        out.push_back(say{"command ended (" + std::to_string(code) + ", " + step_text(step) +
                          ") while the scheduler is away"});
        break;
      }
      out.push_back(tell_scheduler{msg::job_released{spec_.id, epoch_, step.value_or(0)}});
      out.push_back(say{"released its GPUs (command ended with " + std::to_string(code) + ", " + step_text(step) + ")"});
      if (why_ == stopping::shrink) {
        keep_replicas_only(keep_replicas_);
        out.push_back(say{"runs on " + std::to_string(replicas_) + " replicas (gpus " + join(gpus_) + ")"});
        launch_run(step.value_or(0), "", 0, out);
      }
      break;
    case stopping::evicted:
    case stopping::killed:
      out.push_back(say{"command stopped (" + std::to_string(code) + "); waiting to be started again"});
      break;
    case stopping::no:
      if (registered_) {  // with how it ended: the scheduler keeps a stopped job's step for its resume
        const bool stopped = stopped_with_checkpoint(code);
        out.push_back(tell_scheduler{msg::job_finished{spec_.id, code, stopped, stopped ? step.value_or(0) : 0}});
      }
      if (stopped_with_checkpoint(code))
        finish(code, "stopped (not finished): resumable from " + step_text(step) +
                         "; run the same msomni job again to resume", out);
      else
        finish(code, code == 0 ? "finished" : "command failed with " + std::to_string(code), out);
      break;
  }
  if (!registered_ && scheduler_known_ && !over_) register_again(now, out);
  if (!running_ && !over_ && deferred_start_) {
    const msg::job_command next = *deferred_start_;
    deferred_start_.reset();
    start_run(next, step, out);
  }
  return out;
}

}  // namespace msomni::job_runner
