// The state and the pieces of `msomni job`'s runner actor (job_runner.hpp), shared by the
// files that make it up: job_child.cpp (the command as a child process), job_resize.cpp
// (in-place resizing of msomni-run), job_rejoin.cpp (a restarted scheduler) and
// job_runner.cpp (the scheduler's commands). Internal to apps/msomni.
#pragma once

#include "job_metrics.hpp"
#include "job_runner.hpp"

#include "core/process.hpp"
#include "messages/catalog.hpp"
#include "scheduler_types.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace msomni::cli::runner_detail {

using sched::command_kind;
using poll_atom = caf::atom_constant<caf::atom("jrpoll")>;
using quiet_atom = caf::atom_constant<caf::atom("jrquiet")>;
using reconnect_atom = caf::atom_constant<caf::atom("jrrejoin")>;
using resize_poll_atom = caf::atom_constant<caf::atom("jrresize")>;

enum class stopping : uint8_t { no, drain, shrink, evicted, killed };

struct runner_state {
  job_spec spec;
  caf::actor scheduler;  // invalid while the scheduler is away
  std::function<caf::actor()> find_scheduler;
  std::function<std::optional<control_endpoint>(const std::string&)> find_control;
  std::function<void(int, const std::string&)> done;
  // An in-place resize in progress (resize_in_place): msomni-run is asked to run on
  // resize_to replicas; a shrink answers job_released at resize_epoch once it does.
  uint32_t resize_to = 0;
  uint64_t resize_epoch = 0;
  bool resize_is_shrink = false;
  std::chrono::steady_clock::time_point resize_until;
  // False from the scheduler's loss until the one found again has been told about this job
  // (job_rejoin or job_submit); nothing else is sent to a scheduler that does not know it.
  bool registered = true;
  bool guest = false;  // the current run is a guest's
  // When the job first submitted: a restarted scheduler is told how long ago (its place in line).
  std::chrono::steady_clock::time_point submitted_at = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point reconnect_until;
  process::child child;  // the command, running() until reaped
  bool start_failed = false;  // launch() could not start it: it ends as 127, as a shell reports that
  std::vector<uint32_t> gpus;
  uint64_t epoch = 0;
  uint32_t replicas = 0, keep_replicas = 0;
  stopping why = stopping::no;
  bool over = false, heard = false;
  std::optional<msg::job_command> deferred_start;  // a start that came while the last run ended
  metrics_follower metrics{"", ""};  // RUN_DIR/metrics.jsonl
  static inline const char* name = "job_runner";
};

using runner_actor = caf::stateful_actor<runner_state>;

// job_child.cpp: small helpers and the command as a child process.
uint64_t checkpoint_step(const std::string& run_dir);
uint32_t per_replica(const job_spec& spec);
std::string join(const std::vector<uint32_t>& v);
void say(runner_state& st, const std::string& text);
std::string seconds(double s);
void launch(runner_state& st, uint64_t resume_step, const std::string& host, double share);
void remove_scratch(runner_state& st);
void signal_child(runner_state& st, int sig, stopping why);
void start_run(runner_state& st, const msg::job_command& c);
// How long the end of the job waits for a command it sent SIGTERM before killing it.
inline constexpr std::chrono::milliseconds command_stop_grace{10000};
// Ends the job with `code` (a command asked to stop first gets command_stop_grace).
void finish(runner_actor* self, int code, const std::string& why);
// The job keeps the GPUs of its first `replicas` replicas.
void keep_replicas_only(runner_state& st, uint32_t replicas);
// A steady-clock deadline `seconds` from now.
std::chrono::steady_clock::time_point steady_after(double seconds);

// job_rejoin.cpp: the scheduler goes away and comes back.
msg::job_submit submission(const runner_state& st);
void register_again(runner_actor* self);
void scheduler_lost(runner_actor* self, const caf::down_msg& d);
void look_for_scheduler(runner_actor* self);

// job_resize.cpp: a shrink notice (keep `replicas`, within the drain period) or a grow to
// `replicas`: in place when the job asked for it (job_spec::resize_in_place) and msomni-run's
// control endpoint answers; otherwise a shrink restarts the command on the replicas it
// keeps and a grow applies at its next start.
void resize(runner_actor* self, uint32_t replicas, bool shrink, double within_s, uint64_t epoch);
void poll_resize(runner_actor* self, caf::actor orchestrator, std::string token);

}  // namespace msomni::cli::runner_detail
