// A Slurm allocation as msomni-run reads it from inside sbatch/salloc: the job, its nodes in
// order, how many rank slots each offers (its GPUs when the job has GPUs, else its CPUs) and
// where each sits (racks and switches of topology/tree). Pure: the environment and the text
// of `scontrol show topology` are handed in, so tests give any allocation.
#pragma once

#include "slurm/slurm_hostlist.hpp"  // list_error
#include "slurm/slurm_topology.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace msomni::slurm {

// The value of an environment variable, nullopt when it is not set.
using env_lookup = std::function<std::optional<std::string>(const std::string& name)>;

struct allocated_node {
  std::string name;
  std::string rack = "rack0";
  std::string switch_name = "switch0";
  int64_t slots = 1;
  int64_t cpus = 0;  // the job's CPUs on the node (SLURM_JOB_CPUS_PER_NODE); 0: Slurm did not say
};

struct allocation {
  std::string job_id;
  std::string node_list;        // SLURM_JOB_NODELIST as Slurm gave it
  std::string this_node;        // SLURMD_NODENAME: where msomni-run runs, "" outside a step
  std::vector<allocated_node> nodes;
  std::string slots_from;       // what the slots count, in words ("GPUs (SLURM_GPUS_PER_NODE=8)", ...)
  bool gpu_slots = false;       // the slots are the nodes' GPUs (else their CPUs)
  bool topology_known = false;  // topology/tree placed every node
  int64_t total_slots() const;
};

// SLURM_JOB_ID present: the allocation; absent: nullopt (not inside Slurm). Throws
// slurm::list_error when Slurm's variables cannot be read or disagree (a count per node that
// is not one per node).
std::optional<allocation> read_allocation(const env_lookup& env, const std::string& topology_text);

// The table msomni-run hands every agent of the allocation (msomni-agent --slurm-nodes):
// "NAME:RACK:SWITCH:SLOTS,...".
std::string agent_table(const std::vector<allocated_node>& nodes);
// `node`'s row of such a table (name, rack, switch, slots). Throws slurm::list_error naming
// the row that cannot be read, or saying that `node` has no row or no slot.
allocated_node agent_row(const std::string& table, const std::string& node);

}  // namespace msomni::slurm
