// msomni-run inside a Slurm allocation (sbatch or salloc): the allocation read before anything
// starts (its nodes replace [[cluster.nodes]], racks and switches from topology/tree, slots
// from its GPUs or CPUs), then one job step of msomni-agent processes, one per node, started
// with srun, and what the job gives back to Slurm (idle nodes, with
// cluster.release_idle_nodes). Outside an allocation, or with cluster.slurm = "off", none of
// this happens.
#pragma once

#include "config/job_config.hpp"
#include "core/process.hpp"
#include "slurm/slurm_allocation.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace msomni::apps {

struct slurm_plan {
  slurm::allocation alloc;
  std::vector<std::string> notes;  // what was read and decided, in words, for the journal
};

// Reads the allocation when cluster.slurm allows and SLURM_JOB_ID is set, and rewrites
// cfg.cluster.nodes (and cluster.control_host, when the config leaves it out, to this host's
// address towards the nodes). Lines of `problems` say what stops the job from starting: Slurm's
// variables unreadable, too few slots for elasticity.replicas, cluster.slurm = "require"
// outside Slurm, cluster.release_idle_nodes outside Slurm. Runs `scontrol`.
std::optional<slurm_plan> plan_slurm(config::job_config& cfg, std::vector<std::string>& problems);

// The agents' job step: `srun --nodes=N --ntasks-per-node=1 ... msomni-agent --join ADDRESS
// --slurm-nodes TABLE`, its output (every task's lines, labelled) in RUN_DIR/logs/slurm-agents.log.
// The agents read the job's token from RUN_DIR/control.json, which, like the checkpoints, must
// be on a file system every node sees.
class slurm_agent_step {
 public:
  // Throws process::spawn_error when srun or msomni-agent cannot be started.
  slurm_agent_step(const slurm_plan& plan, const std::string& control_address, const std::filesystem::path& run_dir,
                   double heartbeat_s);
  // The agents leave once the control process is gone; srun is given 20 s for it, then
  // SIGTERM (Slurm ends the step), then SIGKILL.
  ~slurm_agent_step();
  slurm_agent_step(const slurm_agent_step&) = delete;
  slurm_agent_step& operator=(const slurm_agent_step&) = delete;

  const std::string& command_line() const { return command_line_; }
  // Gives `nodes` back to Slurm: `scontrol update JobId=J NodeList=<the other nodes>`; the job
  // keeps running on the rest. "" when Slurm took them, else its error.
  std::string release(const std::vector<std::string>& nodes);
  // The allocation's nodes not given back.
  const std::vector<std::string>& held_nodes() const { return held_; }

 private:
  slurm::allocation alloc_;
  std::vector<std::string> held_;
  std::string command_line_;
  process::child srun_;
};

// The text a program prints, run with `args` (PATH searched), and its exit code; for scontrol.
struct tool_output {
  int code = -1;
  std::string text;
};
tool_output run_tool(const std::vector<std::string>& argv);

}  // namespace msomni::apps
