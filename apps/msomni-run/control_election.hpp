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
};

// Campaigns (printing what it waits for on `err`) and, once elected, starts serving the
// lease. An exit code when msomni-run must not go on; nullopt to start the job.
std::optional<int> stand_for_control(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
                                     control_role& role, std::ostream& err);

}  // namespace msomni::apps
