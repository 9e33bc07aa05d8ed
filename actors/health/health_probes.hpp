// The pre-flight's probes: each measures one group of facts on this machine (config and
// data, compute, communication, storage, host) and hands them to the rules of
// health_core.hpp. run_health_checks runs them all at a level and times each.
//
//   quick: one sample per source, small GEMMs, a short ping, no bandwidth or write sample
//          beyond a few MiB (seconds for configs/quickstart.toml);
//   full:  a few samples per source, larger GEMMs, loopback bandwidth, a bigger write sample.
#pragma once

#include "health_core.hpp"

#include "config/job_config.hpp"
#include "model/model.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace msomni::health {

struct health_options {
  health_level level = health_level::quick;
  std::filesystem::path checkpoint_dir;  // resolved (msomni-run's rule: under the run directory)
  std::string peer_binary;               // msomni-health-peer; empty: found beside this program
  // An agent's node, checked for the control process: its [[cluster.nodes]] entry says how
  // many ranks it runs, and the control and metrics ports are the control node's to check.
  // Empty: the node msomni-run or msomni health-check runs on.
  std::string node;
};

// Every check, in a stable order. Never throws: a probe that throws becomes a failed check
// naming the exception.
health_report run_health_checks(const config::job_config& cfg, const health_options& o);

// The report of a config that did not load: config.schema fails with every problem.
health_report config_failed_report(const std::string& config_path, const std::vector<std::string>& problems,
                                   health_level level);

// --- the probes (one file each) ----------------------------------------------------------
using add_fn = std::function<void(check_result)>;

// The model's memory estimate for one rank and one micro-batch of max_seq_len positions,
// without allocating it; nullopt with `why` when it cannot be made (a plugin model).
std::optional<model::memory_estimate> estimate_model_memory(const config::job_config& cfg, std::string& why);
// The ranks a node would run: elasticity.replicas spread over cluster.nodes, at most the
// node's slots (the named node's; the first's when `node` is empty or not listed).
int64_t ranks_on_this_node(const config::job_config& cfg, const std::string& node = "");

void probe_config_and_data(const config::job_config& cfg, const health_options& o, const add_fn& add);
void probe_compute(const config::job_config& cfg, const health_options& o, const add_fn& add);
void probe_communication(const config::job_config& cfg, const health_options& o, const add_fn& add);
void probe_storage(const config::job_config& cfg, const health_options& o, const add_fn& add);
void probe_host(const config::job_config& cfg, const health_options& o, const add_fn& add);
void probe_store(const config::job_config& cfg, const health_options& o, const add_fn& add);

// The IPv4 bind probe of a port ("" when free), as msomni-run's environment check makes it.
std::string port_bind_problem(const std::string& host, int64_t port);

}  // namespace msomni::health
