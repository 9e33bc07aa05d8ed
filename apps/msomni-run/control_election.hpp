// msomni-run with [control] store: before anything starts, the process campaigns for the
// job's leadership in the store and stands by while another leads. Once elected it starts
// the job, takes over the one its deposed or dead leader left running (resuming from the
// newest checkpoint, after the old leader let go of the run directory), or exits when the
// job it stood by for has ended.
#pragma once

#include "control_leadership.hpp"
#include "run_options.hpp"
#include "run_paths.hpp"

#include "config/job_config.hpp"

#include <atomic>
#include <memory>
#include <optional>

namespace msomni::apps {

struct control_role {
  std::unique_ptr<control::control_leadership> leadership;  // null: no store (embedded)
  control::election elected;
  std::atomic<bool> deposed{false};  // set once by the leadership's thread
  // Why, written before `deposed` is set (read it once `deposed` is seen): the store could not
  // be reached to renew the lease, or another leader's term fenced a commit.
  std::string deposed_why;
  // Deposed because its lease ran out (the store did not answer), not by another leader's
  // fence: nobody may lead the job, so this process stands for it again (stand_again).
  bool lease_ran_out = false;
};

// Campaigns (printing what it waits for on `err`) and, once elected, starts serving the
// lease. An exit code when msomni-run must not go on; nullopt to start the job.
std::optional<int> stand_for_control(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
                                     control_role& role, std::ostream& err);

// A leader whose lease ran out while the store did not answer leaves its ranks training and
// stands for the job's leadership again, as a new candidate: it replaces itself with a fresh
// msomni-run of the same command line (without --fresh: a takeover deletes nothing), which
// campaigns for as long as the ranks train without a leader and adopts them if it wins.
// Bounded: at most `stands_max` times per command; returns the exit code when it does not (or
// cannot) stand again.
inline constexpr int stands_max = 8;
int stand_again(int argc, char** argv, const control_role& role, std::ostream& err);

}  // namespace msomni::apps
