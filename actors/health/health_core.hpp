// The pre-flight health check's verdicts: each check is a fact measured by a probe
// (health_probes.hpp) turned into a status by a pure rule here. No clock, file or socket:
// a probe hands in what it saw (free bytes, a GEMM's error, a connect's errno text), the
// rule says pass, warn, fail or skipped with the value, the threshold and the reason, so
// every rule is tested with made-up facts (a full disk without filling one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msomni::health {

enum class check_status { pass, warn, fail, skipped };
const char* to_string(check_status s);

enum class health_level { quick, full };
const char* to_string(health_level l);
std::optional<health_level> parse_level(const std::string& s);

struct check_result {
  std::string id;         // stable, e.g. "storage.free_space" (docs/health_check.md lists them)
  check_status status = check_status::skipped;
  std::string value;      // what was measured, in `unit`
  std::string threshold;  // what it was judged against ("" when nothing numeric)
  std::string unit;
  std::string reason;     // why this status, in words
  double ms = 0.0;        // how long the probe took
};

struct health_report {
  std::string node;
  std::string config;
  health_level level = health_level::quick;
  std::vector<check_result> checks;
};

// fail when any check failed, else warn when any warned, else pass.
check_status verdict(const health_report& r);

// --- the rules: fact in, verdict out ---------------------------------------------------

check_result skipped(std::string id, std::string reason);

// Every problem the config's loader or environment check named (empty: pass).
check_result judge_problems(std::string id, const std::vector<std::string>& problems, const std::string& ok_value);

// One sample per source decoded for real: `problem` empty when it decoded.
// A source's first samples through the pipeline's decoder. problem: the source gave nothing to
// decode (no shard, a shard that does not open, no sample); refused: samples the decoder or the
// sample check refused, which training skips and counts as bad samples (the first one's key
// and cause are kept).
struct decode_fact {
  std::string source;
  std::string sample_key;
  uint64_t samples_decoded = 0;
  std::string problem;
  double decode_ms = 0.0;
  uint64_t samples_refused = 0;
  std::string refused_key;
  std::string refused_reason;
};
check_result judge_decode(const decode_fact& f);

// CPU (or CUDA) GEMM against the naive reference result.
struct gemm_fact {
  int64_t n = 0;             // square n x n x n
  double max_abs_error = 0;  // |backend - reference|, largest element
  double tolerance = 0;
  double gflops = 0;
  std::string error;         // the backend threw: why
};
check_result judge_gemm_parity(std::string id, const gemm_fact& f);
check_result judge_gemm_speed(const gemm_fact& f, double min_gflops);

struct gpu_fact {
  bool cuda_compiled = false;
  int64_t devices = 0;
  uint64_t smallest_memory_bytes = 0;
  std::string status;  // the probe's reason when no device is usable
  bool cuda_required = false;  // training.device = "cuda"
};
check_result judge_gpu(const gpu_fact& f);
// "no GPU: <reason>" for the checks that need one.
std::string no_gpu_reason(const gpu_fact& f);

struct transport_fact {
  std::string ucx_version;
  std::vector<std::string> transports;  // UCX transport names the context found
  std::string error;
};
check_result judge_transports(const transport_fact& f);

// Two real processes: round trip of small frames and bulk bandwidth.
struct loopback_fact {
  std::string error;
  double round_trip_us = 0;
  double bandwidth_mb_s = 0;  // 0: not measured (quick level)
};
check_result judge_loopback_latency(const loopback_fact& f, double max_round_trip_us);
check_result judge_loopback_bandwidth(const loopback_fact& f, double min_mb_s);

struct allreduce_fact {
  int64_t ranks = 0;
  int64_t elements = 0;
  std::string error;   // threw, or the sum was wrong (first mismatch)
};
check_result judge_allreduce(const allreduce_fact& f);

struct reach_fact {
  std::string node;
  std::string host;
  int64_t port = 0;           // the port tried
  bool port_required = false;  // health.node_port: something must listen there
  bool connected = false;
  bool refused = false;       // the host answered with a reset: it is up, nothing listens
  std::string error;          // any other failure (timeout, no route, unresolvable)
};
check_result judge_reach(const reach_fact& f);

struct disk_fact {
  std::string dir;              // the directory whose filesystem was asked
  uint64_t free_bytes = 0;
  uint64_t checkpoint_bytes = 0;  // one checkpoint: parameters + optimizer state
  int64_t keep = 1;
};
check_result judge_disk_space(const disk_fact& f);

struct write_fact {
  std::string dir;
  uint64_t bytes = 0;
  double seconds = 0;
  std::string error;
};
check_result judge_write_speed(const write_fact& f, double min_mb_s);

// What a resume would load: the ranks take the newest checkpoint that verifies, so a damaged
// newest one is a warning naming the one loaded instead, and only a root whose checkpoints all
// fail (the run would start over and write over them) refuses the start.
struct checkpoint_fact {
  bool root_exists = false;
  std::optional<uint64_t> loaded_step;      // the newest checkpoint that verifies
  std::vector<std::string> skipped;         // "step-N: why" for each newer one that does not
  std::string verify_error;                 // the root itself could not be read: why
  std::vector<std::string> refused_keys;    // compare_for_resume on the loaded one: keys a resume may not change
  bool config_known = true;                 // the loaded manifest records a config
};
check_result judge_latest_checkpoint(const checkpoint_fact& f);
check_result judge_resume_config(const checkpoint_fact& f);

check_result judge_stale_temps(bool root_exists, const std::vector<std::string>& temporaries);

struct clock_fact {
  int state = 0;           // adjtimex's return: 5 is TIME_ERROR (not synchronised)
  int64_t maxerror_us = 0;
  std::string error;
  // Every event time of the job comes from this host's clock: no agents on other nodes and
  // no standby control process ([control] store) whose journal lines could interleave.
  bool one_host = false;
};
check_result judge_clock(const clock_fact& f, int64_t max_error_us);

struct limit_fact {
  std::string id;
  std::string what;       // "RLIMIT_NOFILE"
  uint64_t soft = 0;      // RLIM_INFINITY as UINT64_MAX
  uint64_t wanted = 0;
  bool fail_below = false;  // below `wanted` fails (else warns)
};
check_result judge_limit(const limit_fact& f);

struct memory_fact {
  uint64_t available_bytes = 0;
  uint64_t per_rank_bytes = 0;
  int64_t ranks_on_node = 0;
  std::string error;  // no estimate or no /proc/meminfo: why
};
check_result judge_memory(const memory_fact& f);

check_result judge_port(std::string id, const std::string& key, int64_t port, const std::string& problem);

check_result judge_governor(const std::optional<std::string>& governor);

// The control store ([control] store): each etcd member's answer to a status request, and
// whether a lease could be granted (a write through the raft leader).
struct store_member_fact {
  std::string endpoint;
  bool up = false;
  std::string error;
  std::string version;
  uint64_t leader_id = 0;  // the raft leader this member follows (0: none)
};
struct store_fact {
  std::string url;  // "" when [control] store is not set
  std::vector<store_member_fact> members;
  bool writable = false;
  std::string write_error;
};
// Fails without a quorum of members answering, without a raft leader, or when a lease cannot
// be granted; warns when a member is down but a quorum answers.
check_result judge_store(const store_fact& f);

}  // namespace msomni::health
