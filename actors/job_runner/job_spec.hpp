// What `msomni job` runs and how (its command line, parsed by apps/msomni/job_command.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::job_runner {

struct job_spec {
  std::string id;
  uint8_t job_class = 1;  // 0 critical, 1 regular, 2 best-effort
  uint32_t gpus = 1, gpus_per_replica = 0, min_replicas = 1;  // 0 per replica = the whole job
  std::vector<std::string> command;  // argv; command[0] is looked up in PATH
  std::string run_dir;  // optional: checkpoints/latest gives the checkpoint step, metrics.jsonl the steps
  // Optional: MSOMNI_SCRATCH_DIR=scratch_dir/ID for the command, created before each start
  // and removed whenever the command ends (a preempted job leaves no scratch files
  // on shared storage; what it needs to resume is in its checkpoint).
  std::string scratch_dir;
  double reconnect_s = 300;  // how long to wait for a restarted scheduler (0: end at once)
  // The command is msomni-run with run_dir as its --run-dir: it starts with the scheduler's
  // replicas (--set elasticity.replicas=N is added), and shrink and grow notices become
  // scale-down / scale-up requests to its control endpoint, applied at its next barrier,
  // instead of a restart. A request that fails falls back to the restart.
  bool resize_in_place = false;
  // Device memory the job needs on each GPU to run as a guest (--memory-gb, in bytes; 0: not
  // declared). Its run's own memory reports raise it at the scheduler when they forecast more.
  uint64_t memory_bytes = 0;
};

// GPUs per replica: the whole job's when not given.
inline uint32_t per_replica(const job_spec& spec) { return spec.gpus_per_replica ? spec.gpus_per_replica : spec.gpus; }

}  // namespace msomni::job_runner
