// Reads GPU-cluster job traces as published, without conversion: the Microsoft ITP CSVs
// (job_id, submission_time, duration, num_gpu) and the Alibaba GPU v2023 pods.csv
// (job_id, submit_time_s, duration_s, num_gpus, qos, ...), recognised by their header.
// Also the Alibaba node list (sn, gpu) as a cluster topology.
#pragma once

#include "scheduler_types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msomni::sim {

// The CSV columns read (by header name, in any order; other columns are ignored).
namespace columns {
inline constexpr const char* itp[] = {"job_id", "submission_time", "duration", "num_gpu"};
inline constexpr const char* alibaba[] = {"job_id", "submit_time_s", "duration_s", "num_gpus", "qos"};
inline constexpr const char* node_list[] = {"gpu"};
}  // namespace columns

struct trace_job {
  std::string id;
  double submit_s = 0;
  double duration_s = 0;
  uint32_t gpus = 0;
  std::optional<sched::job_class> klass;  // from the trace's QoS column when it has one
};

struct trace {
  std::string format;                    // "itp" or "alibaba-v2023"
  std::vector<trace_job> jobs;           // in submission order
  uint64_t rows = 0;
  uint64_t skipped_no_gpu = 0;           // CPU-only pods (num_gpus 0)
  uint64_t skipped_bad = 0;              // empty/unparsable duration or submit time
};

// Throws std::runtime_error naming the file, line and column on a malformed file.
trace read_trace(const std::string& path);
// Node list: one node per row, `gpu` column = GPUs on that node (rows with 0 are skipped).
std::vector<uint32_t> read_node_list(const std::string& path);

// Alibaba QoS -> class: LS and Guaranteed are reserved (critical), Burstable regular, BE
// best-effort. Returns nothing for an unknown value.
std::optional<sched::job_class> class_of_qos(const std::string& qos);

}  // namespace msomni::sim
