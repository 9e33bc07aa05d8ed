// Slurm's compact lists, as its environment and scontrol print them: host lists
// ("gpu[01-03,07],login1") and repeated counts ("2(x3),1"). Pure text functions.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::slurm {

struct list_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "n[1-3,07-08],gpu" -> n1 n2 n3 n07 n08 gpu: each bracket range counts up keeping the width
// of its first bound (zero padding), several bracket groups multiply, commas inside brackets
// do not split hosts. Throws list_error naming the list and what is wrong with it.
std::vector<std::string> expand_hostlist(const std::string& list);

// "2(x3),1" -> 2 2 2 1 (SLURM_JOB_CPUS_PER_NODE, SLURM_TASKS_PER_NODE). Throws list_error.
std::vector<int64_t> expand_counts(const std::string& list);

// The GPU indices of SLURM_JOB_GPUS / SLURM_STEP_GPUS ("0,1,3" or "0-3") counted. Throws list_error.
int64_t count_index_list(const std::string& list);

}  // namespace msomni::slurm
