// The decisions of `msomni job`'s runner (apps/msomni/job_runner.hpp says what it does for a
// user): what the scheduler's commands, the command's end, a lost and a found scheduler and
// an in-place resize mean for the job. Pure: no CAF, clock, thread, process or file; events
// and time come in as arguments, what to do goes out as actions the shell carries out.
//
//   (no run) --start | colocate--> running (why = no) --the command ends--> job_finished, end
//                                  (exit 5: end "stopped", resumable from its checkpoint; the
//                                  scheduler keeps the step, and the same job submitted again
//                                  starts with it as resume_step)
//   a start's resume_step against the run directory's newest checkpoint: the checkpoint wins
//   interrupted (Ctrl-C or SIGTERM to msomni job) --> SIGTERM, the command ends --> job_finished
//                                  as it ended (exit 5 or 4: stopped, resumable), end with
//                                  that code, else 1
//   running --preempt_notice--> SIGTERM, stopping(drain) --ends--> job_released
//   running --preempt (shrink)--> in place: scale-down, then job_released once it runs smaller
//                                 else SIGTERM, stopping(shrink) --ends--> job_released, start smaller
//   running --resize (grow)--> in place: scale-up; else at the next start
//   running --force_release--> SIGKILL; --evict_guest | requeue--> SIGTERM; both wait to start again
//                              (a shrink's force_release: the run restarts on the replicas it keeps)
//   a start while the last run is ending: kept, and taken once it has ended; a drain, shrink,
//                              grow, eviction or force release until then applies to it
//   the scheduler goes away --> look for it every second up to reconnect_s (0: SIGTERM, end 1)
//     found --> a run that goes on rejoins; a guest's run is stopped; no run: submit again
#pragma once

#include "job_spec.hpp"

#include "core/time_point.hpp"
#include "messages/cluster_job_messages.hpp"
#include "messages/scheduling_messages.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace msomni::job_runner {

// Why the command was asked to stop (no: it runs, or ends by itself).
enum class stopping : uint8_t { no, drain, shrink, evicted, killed };
enum class stop_signal : uint8_t { terminate, kill, interrupt };  // SIGTERM, SIGKILL, SIGINT

// -- actions: what the shell does ---------------------------------------------------------------
struct say {  // a line "msomni job ID: text"
  std::string text;
  bool operator==(const say&) const = default;
};
using scheduler_message = std::variant<msg::job_submit, msg::job_rejoin, msg::job_released, msg::job_finished>;
struct tell_scheduler {
  scheduler_message message;
  bool operator==(const tell_scheduler&) const = default;
};
// Start the command on `gpus` (its environment says them, the replicas, the resume step and,
// for a guest, the host and share). A command that cannot start ends as 127 (on_command_ended).
struct launch {
  std::vector<uint32_t> gpus;
  uint32_t replicas = 0;
  uint64_t resume_step = 0;
  std::string host;  // empty unless a guest
  double share = 0;
  bool operator==(const launch&) const = default;
};
struct signal_command {
  stop_signal sig = stop_signal::terminate;
  bool operator==(const signal_command&) const = default;
};
// Find msomni-run's control endpoint in the run directory and ask it to scale to `replicas`
// (grace `within_s`): on_resize_refused with why, or on_resize_accepted.
struct ask_resize {
  bool shrink = false;
  uint32_t replicas = 0;
  double within_s = 0;
  bool operator==(const ask_resize&) const = default;
};
// on_resize_poll_due after `after`.
struct poll_resize_status {
  nanos after{0};
  bool operator==(const poll_resize_status&) const = default;
};
// Ask msomni-run's status now: on_resize_status with its reply, or on_resize_refused.
struct ask_status {
  bool operator==(const ask_status&) const = default;
};
// The exit code of a command that stopped with a checkpoint to resume from, not finished
// (msomni-run's for SIGINT, SIGTERM or `msomni stop`): the job ends "stopped" with it.
inline constexpr int command_stopped_code = 5;
// msomni-run's exit code for SIGTERM where it tells a preemption (SIGTERM: a manager takes the
// resources back) from a stop: resumable from its checkpoint all the same.
inline constexpr int command_preempted_code = 4;
inline bool stopped_with_checkpoint(int code) { return code == command_stopped_code || code == command_preempted_code; }

// A command asked with SIGTERM to give its GPUs back (evicted, requeued) gets this long to
// stop; then it is killed. The job's end gives a stopping command the same grace.
inline constexpr nanos command_stop_grace = std::chrono::seconds(10);
// on_stop_overdue(run) after `after` (the run that was sent SIGTERM).
struct kill_if_still_running {
  nanos after{0};
  uint64_t run = 0;
  bool operator==(const kill_if_still_running&) const = default;
};
// Look for a restarted scheduler after `after`: on_reconnect_due.
struct reconnect_later {
  nanos after{0};
  bool operator==(const reconnect_later&) const = default;
};
// Look for a restarted scheduler now (its info file): on_scheduler_found or _not_found.
struct find_scheduler {
  bool operator==(const find_scheduler&) const = default;
};
// The next metrics poll reports the newest `lines` lines again (a new predictor has no history).
struct rewind_metrics {
  size_t lines = 0;
  bool operator==(const rewind_metrics&) const = default;
};
// The job ends with `code`. `grace`: the command was asked to stop; a running one gets its
// grace period to do so before it is killed.
struct finish_job {
  int code = 0;
  std::string why;
  bool grace = false;
  bool operator==(const finish_job&) const = default;
};

using action = std::variant<say, tell_scheduler, launch, signal_command, ask_resize, poll_resize_status, ask_status,
                            reconnect_later, find_scheduler, rewind_metrics, finish_job, kill_if_still_running>;
using actions = std::vector<action>;

class job_runner_core {
 public:
  explicit job_runner_core(job_spec spec);

  // The runner starts: it submits the job.
  actions start(time_point now);
  // Scheduler -> job. `checkpoint_step`: the step the command last saved, as its run
  // directory tells (nullopt: not known; always without a run directory), which a start
  // resumes from whatever the scheduler says.
  actions on_command(const msg::job_command& c, time_point now, std::optional<uint64_t> checkpoint_step = std::nullopt);
  // `checkpoint_step` below: the step the command last saved, as its run directory tells
  // (nullopt: msomni job cannot know it; the scheduler then hears 0, "none").
  actions on_preempt_notice(const msg::preempt_notice& n, std::optional<uint64_t> checkpoint_step);
  // The command ended with `shell_code` (128 + signal for a signal, 127: it could not start).
  actions on_command_ended(int shell_code, std::optional<uint64_t> checkpoint_step, time_point now);
  // Nothing heard from the scheduler 10 s after submitting: say so.
  actions on_quiet_check() const;
  // msomni job itself was asked to stop: the command gets SIGTERM (and its grace, then
  // SIGKILL), and the job ends once it has; a command that stopped with a checkpoint (exit 5
  // or 4) is reported stopped, resumable, like one stopped by itself. From then on the scheduler's
  // commands are ignored. Idempotent.
  // msomni job itself was asked to stop: `forward` is what its command gets (SIGINT for a
  // person's Ctrl-C, so msomni-run ends "stopped"; SIGTERM for a manager's, "preempted").
  actions on_interrupted(stop_signal forward = stop_signal::terminate);

  // The scheduler went away (the shell checked it is the current one).
  actions on_scheduler_lost(time_point now);
  // reconnect_later is due: find_scheduler, or the job ends when reconnect_s has passed.
  actions on_reconnect_due(time_point now);
  actions on_scheduler_found(time_point now);
  actions on_scheduler_not_found(const std::optional<std::string>& error);

  // In-place resizing (ask_resize, poll_resize_status).
  actions on_resize_refused(const std::string& why);
  actions on_resize_accepted();
  // `ok`: msomni-run accepted the status request; `status_json` its reply.
  actions on_resize_status(bool ok, const std::string& status_json, uint64_t checkpoint_step);
  actions on_resize_poll_due(time_point now);
  // kill_if_still_running is due: SIGKILL when that run still runs.
  actions on_stop_overdue(uint64_t run);

  bool over() const noexcept { return over_; }
  bool registered() const noexcept { return registered_; }
  bool command_running() const noexcept { return running_; }
  stopping why() const noexcept { return why_; }
  uint64_t epoch() const noexcept { return epoch_; }
  uint32_t replicas() const noexcept { return replicas_; }
  const std::vector<uint32_t>& gpus() const noexcept { return gpus_; }
  uint32_t resizing_to() const noexcept { return resize_to_; }
  const job_spec& spec() const noexcept { return spec_; }

 private:
  msg::job_submit submission(time_point now) const;
  void start_run(const msg::job_command& c, std::optional<uint64_t> checkpoint_step, actions& out);
  void launch_run(uint64_t resume_step, const std::string& host, double share, actions& out);
  void stop(stop_signal sig, stopping why, actions& out);
  void finish(int code, std::string why, actions& out);
  void end_interrupted(int code, std::optional<uint64_t> step, actions& out);
  // "checkpoint step 2013", or "checkpoint step unknown (...)" saying why msomni job cannot
  // know it.
  std::string step_text(std::optional<uint64_t> step) const;
  void keep_replicas_only(uint32_t replicas);
  void keep_of_deferred(uint32_t keep);
  void register_again(time_point now, actions& out);
  void resize(uint32_t replicas, bool shrink, double within_s, uint64_t epoch, time_point now, actions& out);
  void resize_the_old_way(bool shrink, const std::string& why, actions& out);

  job_spec spec_;
  bool scheduler_known_ = true;  // false from its loss until one is found again
  // False from the scheduler's loss until the one found again has been told about this job
  // (job_rejoin or job_submit); nothing else is sent to a scheduler that does not know it.
  bool registered_ = true;
  bool guest_ = false;    // the current run is a guest's
  bool running_ = false;  // the command was launched and has not ended
  time_point submitted_at_;  // a restarted scheduler is told how long ago (its place in line)
  time_point reconnect_until_;
  std::vector<uint32_t> gpus_;
  uint64_t epoch_ = 0;
  uint64_t run_ = 0;  // launches so far: names the run a kill_if_still_running is for
  uint32_t replicas_ = 0, keep_replicas_ = 0;
  stopping why_ = stopping::no;
  bool over_ = false, heard_ = false, interrupted_ = false;
  std::optional<msg::job_command> deferred_start_;  // a start that came while the last run ended
  // An in-place resize in progress: msomni-run is asked to run on resize_to_ replicas; a
  // shrink answers job_released at resize_epoch_ once it does.
  uint32_t resize_to_ = 0;
  uint64_t resize_epoch_ = 0;
  bool resize_is_shrink_ = false;
  time_point resize_until_;
};

// msomni-run's status reply (JSON) says it runs on `replicas` ranks.
bool runs_on(const std::string& status_json, uint32_t replicas);
// "1,2,3".
std::string join(const std::vector<uint32_t>& v);
// "2.5 s".
std::string seconds_text(double s);

}  // namespace msomni::job_runner
