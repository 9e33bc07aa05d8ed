// The embedded default of msomni-run: this process becomes the control process (UCX node
// "control" with the orchestrator actor) and starts one msomni-rank process per replica on
// this machine. Writes the run directory: metrics.jsonl, events.jsonl, control.json
// (address + access token, mode 0600). Returns the process exit code.
#pragma once

#include "config/job_config.hpp"
#include <nlohmann/json.hpp>
#include "control_election.hpp"
#include "resume_check.hpp"
#include "run_options.hpp"
#include "run_paths.hpp"
#include "slurm_launch.hpp"

namespace msomni::apps {

// `paths` passed check_run_paths; launch_job claims them (markers, locks) before writing.
// `resume_from`: what check_resume found (its accepted changes go into the resume event).
// `preflight`: the pre-flight's report (null when it was off), kept as RUN_DIR/preflight.json
// and journaled as a "preflight" event once the run directory is claimed.
// `control`: the leadership this process holds in the control store (null: no store); its
// journal events go to the store's event log, and losing it stops the job (exit_deposed).
// `slurm`: the Slurm allocation the job runs on (null: none); the agents are started on its
// nodes with srun, and with cluster.release_idle_nodes a node a scale-down empties goes back.
int launch_job(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
               const std::optional<resume_check>& resume_from, const nlohmann::ordered_json& preflight = {},
               control_role* control = nullptr, const slurm_plan* slurm = nullptr);

}  // namespace msomni::apps
