// The embedded default of msomni-run: this process becomes the control process (UCX node
// "control" with the orchestrator actor) and starts one msomni-rank process per replica on
// this machine. Writes the run directory: metrics.jsonl, events.jsonl, control.json
// (address + access token, mode 0600). Returns the process exit code.
#pragma once

#include "config/job_config.hpp"
#include "run_options.hpp"

namespace msomni::apps {

int launch_job(const config::job_config& cfg, const run_options& opts, const char* argv0);

}  // namespace msomni::apps
