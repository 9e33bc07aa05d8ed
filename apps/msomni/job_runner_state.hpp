// The state and the pieces of `msomni job`'s runner actor (job_runner.hpp), a thin shell
// around job_runner_core (actors/job_runner): messages and timers in, the core's actions
// carried out. job_runner.cpp holds the actor and the action dispatch, job_child.cpp the
// command as a child process, job_resize.cpp the requests to msomni-run's control endpoint.
// Internal to apps/msomni.
#pragma once

#include "job_metrics.hpp"
#include "job_runner.hpp"
#include "job_memory.hpp"
#include "job_runner_core.hpp"

#include "core/clock.hpp"
#include "core/process.hpp"
#include "messages/catalog.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace msomni::cli::runner_detail {

using poll_atom = caf::atom_constant<caf::atom("jrpoll")>;
using quiet_atom = caf::atom_constant<caf::atom("jrquiet")>;
using reconnect_atom = caf::atom_constant<caf::atom("jrrejoin")>;
using resize_poll_atom = caf::atom_constant<caf::atom("jrresize")>;
using stop_overdue_atom = caf::atom_constant<caf::atom("jrkill")>;

struct runner_state {
  job_runner::job_runner_core core{job_spec{}};
  msg::scheduler_actor scheduler;  // invalid while the scheduler is away
  std::function<msg::scheduler_actor()> find_scheduler;
  std::function<std::optional<control_endpoint>(const std::string&)> find_control;
  std::function<void(int, const std::string&)> done;
  std::optional<control_endpoint> control;  // msomni-run's, while an in-place resize runs
  real_clock clock;
  process::child child;  // the command, running() until reaped
  bool start_failed = false;  // it could not start: it ends as 127, as a shell reports that
  metrics_follower metrics{"", ""};  // RUN_DIR/metrics.jsonl
  events_follower events{""};       // RUN_DIR/events.jsonl: the run's memory advice
  job_runner::memory_report_tracker memory{""};
  static inline const char* name = "job_runner";
};

// What the runner takes: the scheduler's messages about its job, and its own timers and
// interruptions.
using runner_impl = msg::job_actor::extend<caf::reacts_to<reconnect_atom>, caf::reacts_to<resize_poll_atom>,
                                           caf::reacts_to<quiet_atom>, caf::reacts_to<stop_overdue_atom, uint64_t>,
                                           caf::reacts_to<interrupt_atom, int>, caf::reacts_to<poll_atom>>;
using runner_actor = caf::stateful_actor<runner_state, runner_impl::base>;

// job_runner.cpp: the core's actions, carried out in order.
void carry_out(runner_actor* self, job_runner::actions acts);

// job_child.cpp: the command as a child process.
// The step the command last saved a checkpoint at, as its run directory tells: the one
// RUN_DIR/checkpoints/latest names (msomni-run's checkpoint root), else, for a command that
// keeps its checkpoints its own way, the step of the newest RUN_DIR/metrics.jsonl line with
// checkpoint_ms > 0 (saved_step_in_metrics). nullopt: neither says (or no run directory), so
// msomni job cannot know it.
std::optional<uint64_t> saved_step(const std::string& run_dir);
void say(const runner_state& st, const std::string& text);
void launch(runner_state& st, const job_runner::launch& l);
void remove_scratch(runner_state& st);
void signal_child(runner_state& st, job_runner::stop_signal sig);
// How long the end of the job waits for a command it sent SIGTERM before killing it.
inline constexpr auto command_stop_grace = std::chrono::duration_cast<std::chrono::milliseconds>(job_runner::command_stop_grace);
// How long the job's end waits for the scheduler to confirm it has the job_finished.
inline constexpr auto job_end_confirm_timeout = std::chrono::seconds(5);
// Ends the job (a command asked to stop first gets command_stop_grace when `f.grace`) once
// the scheduler has handled what was sent to it before.
void finish(runner_actor* self, const job_runner::finish_job& f);

// job_resize.cpp: msomni-run resized in place.
void ask_resize(runner_actor* self, const job_runner::ask_resize& r);
void ask_status(runner_actor* self);

}  // namespace msomni::cli::runner_detail
