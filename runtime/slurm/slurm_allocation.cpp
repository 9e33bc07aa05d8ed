// Reading a Slurm allocation from its environment (see slurm_allocation.hpp).
#include "slurm/slurm_allocation.hpp"

#include "slurm/slurm_hostlist.hpp"

#include <sstream>

namespace msomni::slurm {

namespace {

std::string value_of(const env_lookup& env, const std::string& name) { return env(name).value_or(""); }

// "2", "a100:2" or "gpu:a100:2" (SLURM_GPUS_PER_NODE): the count after the last ':'.
int64_t gpus_per_node(const std::string& text) {
  const auto count = text.substr(text.rfind(':') == std::string::npos ? 0 : text.rfind(':') + 1);
  if (count.empty() || count.size() > 6 || count.find_first_not_of("0123456789") != std::string::npos)
    throw list_error("SLURM_GPUS_PER_NODE=\"" + text + "\" names no GPU count");
  return std::stol(count);
}

}  // namespace

int64_t allocation::total_slots() const {
  int64_t n = 0;
  for (const auto& node : nodes) n += node.slots;
  return n;
}

std::optional<allocation> read_allocation(const env_lookup& env, const std::string& topology_text) {
  const auto job = env("SLURM_JOB_ID");
  if (!job || job->empty()) return std::nullopt;
  allocation a;
  a.job_id = *job;
  a.node_list = value_of(env, "SLURM_JOB_NODELIST");
  if (a.node_list.empty()) a.node_list = value_of(env, "SLURM_NODELIST");
  a.this_node = value_of(env, "SLURMD_NODENAME");
  const auto names = expand_hostlist(a.node_list);
  if (names.empty()) throw list_error("SLURM_JOB_ID is " + a.job_id + " but SLURM_JOB_NODELIST names no node");
  // The CPUs of each node. They are the slots without GPUs, so then they must read; beside
  // GPUs they only size the agents' step, and an unreadable list leaves them unknown.
  const auto cpus_text = value_of(env, "SLURM_JOB_CPUS_PER_NODE");
  const bool gpus = !value_of(env, "SLURM_GPUS_PER_NODE").empty() || !value_of(env, "SLURM_JOB_GPUS").empty();
  std::vector<int64_t> cpus;
  try {
    cpus = expand_counts(cpus_text);
  } catch (const list_error&) {
    if (!gpus) throw;
  }
  // Slots: the GPUs of each node when the job holds GPUs, else its CPUs.
  std::vector<int64_t> slots;
  a.gpu_slots = gpus;
  if (const auto per_node = value_of(env, "SLURM_GPUS_PER_NODE"); !per_node.empty()) {
    slots.assign(names.size(), gpus_per_node(per_node));
    a.slots_from = "GPUs (SLURM_GPUS_PER_NODE=" + per_node + ")";
  } else if (const auto ids = value_of(env, "SLURM_JOB_GPUS"); !ids.empty()) {
    // The batch node's GPU indices; a GPU allocation gives every node the same gres.
    slots.assign(names.size(), count_index_list(ids));
    a.slots_from = "GPUs (SLURM_JOB_GPUS=" + ids + ", the same on every node)";
  } else {
    slots = cpus;
    if (slots.size() != names.size())
      throw list_error("SLURM_JOB_CPUS_PER_NODE=\"" + cpus_text + "\" gives " + std::to_string(slots.size()) +
                       " counts for the " + std::to_string(names.size()) + " nodes of " + a.node_list);
    a.slots_from = "CPUs (SLURM_JOB_CPUS_PER_NODE=" + cpus_text + ")";
  }
  const auto places = parse_topology(topology_text);
  a.topology_known = !places.empty();
  for (size_t i = 0; i < names.size(); ++i) {
    allocated_node n;
    n.name = names[i];
    n.slots = slots[i];
    n.cpus = cpus.size() == names.size() ? cpus[i] : 0;
    if (const auto p = places.find(n.name); p != places.end()) {
      n.rack = p->second.rack;
      n.switch_name = p->second.switch_name;
    } else {
      a.topology_known = false;
    }
    a.nodes.push_back(std::move(n));
  }
  return a;
}

std::string agent_table(const std::vector<allocated_node>& nodes) {
  std::string t;
  for (const auto& n : nodes)
    t += (t.empty() ? "" : ",") + n.name + ":" + n.rack + ":" + n.switch_name + ":" + std::to_string(n.slots);
  return t;
}

allocated_node agent_row(const std::string& table, const std::string& node) {
  std::stringstream rows(table);
  std::string row;
  while (std::getline(rows, row, ',')) {
    std::stringstream cells(row);
    allocated_node n;
    std::string slots;
    if (!std::getline(cells, n.name, ':') || !std::getline(cells, n.rack, ':') ||
        !std::getline(cells, n.switch_name, ':') || !std::getline(cells, slots, ':') || slots.empty() ||
        slots.size() > 6 || slots.find_first_not_of("0123456789") != std::string::npos)
      throw list_error("\"" + row + "\" is not NAME:RACK:SWITCH:SLOTS");
    if (n.name != node) continue;
    n.slots = std::stol(slots);
    if (n.slots < 1) throw list_error("it gives node " + node + " no slot");
    return n;
  }
  throw list_error("it has no row for this node, " + node);
}

}  // namespace msomni::slurm
