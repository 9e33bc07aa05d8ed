// The pre-flight rules (health_core.hpp): pure functions of measured facts.
#include "health_core.hpp"

#include <set>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace msomni::health {

namespace {

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string mib(uint64_t bytes) { return num(double(bytes) / double(1 << 20)); }

check_result make(std::string id, check_status s, std::string value, std::string threshold, std::string unit,
                  std::string reason) {
  check_result r;
  r.id = std::move(id);
  r.status = s;
  r.value = std::move(value);
  r.threshold = std::move(threshold);
  r.unit = std::move(unit);
  r.reason = std::move(reason);
  return r;
}

}  // namespace

const char* to_string(check_status s) {
  switch (s) {
    case check_status::pass: return "pass";
    case check_status::warn: return "warn";
    case check_status::fail: return "fail";
    case check_status::skipped: return "skipped";
  }
  return "?";
}

const char* to_string(health_level l) { return l == health_level::quick ? "quick" : "full"; }

std::optional<health_level> parse_level(const std::string& s) {
  if (s == "quick") return health_level::quick;
  if (s == "full") return health_level::full;
  return std::nullopt;
}

check_status verdict(const health_report& r) {
  check_status v = check_status::pass;
  for (const auto& c : r.checks) {
    if (c.status == check_status::fail) return check_status::fail;
    if (c.status == check_status::warn) v = check_status::warn;
  }
  return v;
}

check_result skipped(std::string id, std::string reason) {
  return make(std::move(id), check_status::skipped, "", "", "", std::move(reason));
}

check_result judge_problems(std::string id, const std::vector<std::string>& problems, const std::string& ok_value) {
  if (problems.empty()) return make(std::move(id), check_status::pass, ok_value, "", "", "no problem found");
  std::string reason;
  for (const auto& p : problems) reason += (reason.empty() ? "" : "; ") + p;
  return make(std::move(id), check_status::fail, std::to_string(problems.size()), "0", "problems", reason);
}

// Fails only when nothing decodes (training could not go on); refused samples among decoded
// ones are what training skips and counts, so they warn, naming the first with its cause.
check_result judge_decode(const decode_fact& f) {
  const std::string id = "data.decode." + f.source;
  const auto counted = std::to_string(f.samples_decoded) + " decoded, " + std::to_string(f.samples_refused) + " refused";
  const auto first_refused = f.refused_key + ": " + f.refused_reason;
  if (!f.problem.empty())
    return make(id, check_status::fail, counted, "at least 1 decoded", "samples",
                f.samples_refused > 0 ? f.problem + "; the first refused: " + first_refused
                                      : (f.sample_key.empty() ? "" : f.sample_key + ": ") + f.problem);
  if (f.samples_refused > 0)
    return make(id, check_status::warn, counted, "0 refused", "samples",
                std::to_string(f.samples_refused) + " of the " + std::to_string(f.samples_decoded + f.samples_refused) +
                    " samples tried were refused, the first " + first_refused +
                    "; training skips such samples and counts them as bad samples");
  return make(id, check_status::pass, num(f.decode_ms, 2), "", "ms",
              std::to_string(f.samples_decoded) + (f.samples_decoded == 1 ? " sample" : " samples") +
                  " decoded (first " + f.sample_key + ")");
}

check_result judge_gemm_parity(std::string id, const gemm_fact& f) {
  const std::string size = std::to_string(f.n) + "x" + std::to_string(f.n) + "x" + std::to_string(f.n);
  if (!f.error.empty()) return make(std::move(id), check_status::fail, "", num(f.tolerance, 6), "max abs error", f.error);
  const bool ok = f.max_abs_error <= f.tolerance;  // NaN fails too
  return make(std::move(id), ok ? check_status::pass : check_status::fail, num(f.max_abs_error, 6),
              num(f.tolerance, 6), "max abs error",
              ok ? "a " + size + " GEMM matches the naive reference"
                 : "a " + size + " GEMM differs from the naive reference by more than the tolerance");
}

check_result judge_gemm_speed(const gemm_fact& f, double min_gflops) {
  if (!f.error.empty()) return make("compute.gemm.gflops", check_status::fail, "", num(min_gflops), "GFLOP/s", f.error);
  const bool ok = f.gflops >= min_gflops;
  return make("compute.gemm.gflops", ok ? check_status::pass : check_status::warn, num(f.gflops), num(min_gflops),
              "GFLOP/s",
              ok ? "CPU GEMM speed of a " + std::to_string(f.n) + "-square product"
                 : "CPU GEMM slower than expected: another load on the cores, or a slow BLAS");
}

std::string no_gpu_reason(const gpu_fact& f) {
  if (!f.cuda_compiled) return "no GPU: built without CUDA";
  if (f.status.empty()) return "no GPU: none found";
  const std::string prefix = "no usable GPU: ";  // device_info's own wording
  return "no GPU: " + (f.status.rfind(prefix, 0) == 0 ? f.status.substr(prefix.size()) : f.status);
}

check_result judge_gpu(const gpu_fact& f) {
  const std::string id = "compute.cuda.devices";
  if (f.devices == 0) {
    if (f.cuda_required)
      return make(id, check_status::fail, "0", ">= 1", "devices", no_gpu_reason(f) + " but training.device = \"cuda\"");
    return skipped(id, no_gpu_reason(f));
  }
  return make(id, check_status::pass, std::to_string(f.devices), ">= 1", "devices",
              "smallest device " + mib(f.smallest_memory_bytes) + " MiB");
}

check_result judge_transports(const transport_fact& f) {
  const std::string id = "comm.ucx.transports";
  if (!f.error.empty()) return make(id, check_status::fail, "", "tcp or shared memory", "", f.error);
  std::string list;
  bool tcp = false, shm = false;
  for (const auto& t : f.transports) {
    list += (list.empty() ? "" : ",") + t;
    tcp = tcp || t == "tcp";
    shm = shm || t == "posix" || t == "sysv" || t == "cma" || t == "xpmem";
  }
  if (!tcp && !shm)
    return make(id, check_status::fail, list, "tcp or shared memory", "",
                "UCX " + f.ucx_version + " offers neither TCP nor shared memory: ranks cannot talk");
  return make(id, check_status::pass, list, "tcp or shared memory", "",
              "UCX " + f.ucx_version + (tcp ? "" : " (no tcp: other nodes unreachable)"));
}

check_result judge_loopback_latency(const loopback_fact& f, double max_round_trip_us) {
  const std::string id = "comm.ucx.loopback";
  if (!f.error.empty()) return make(id, check_status::fail, "", num(max_round_trip_us), "us", f.error);
  const bool ok = f.round_trip_us <= max_round_trip_us;
  return make(id, ok ? check_status::pass : check_status::warn, num(f.round_trip_us), num(max_round_trip_us), "us",
              ok ? "round trip of an 8-byte frame between two processes"
                 : "round trips between two processes of this node are slow");
}

check_result judge_loopback_bandwidth(const loopback_fact& f, double min_mb_s) {
  const std::string id = "comm.ucx.bandwidth";
  if (!f.error.empty()) return make(id, check_status::fail, "", num(min_mb_s), "MB/s", f.error);
  const bool ok = f.bandwidth_mb_s >= min_mb_s;
  return make(id, ok ? check_status::pass : check_status::warn, num(f.bandwidth_mb_s), num(min_mb_s), "MB/s",
              ok ? "bulk frames between two processes" : "bulk transfers between two processes are slow");
}

check_result judge_allreduce(const allreduce_fact& f) {
  const std::string id = "comm.allreduce";
  if (!f.error.empty())
    return make(id, check_status::fail, std::to_string(f.ranks), "", "ranks", f.error);
  return make(id, check_status::pass, std::to_string(f.ranks), "", "ranks",
              "ring all-reduce of " + std::to_string(f.elements) + " floats on loopback gave the exact sum");
}

check_result judge_reach(const reach_fact& f) {
  const std::string id = "comm.node." + f.node;
  const std::string where = f.host + ":" + std::to_string(f.port);
  if (f.connected) return make(id, check_status::pass, where, "", "", "TCP connection accepted");
  if (f.refused && !f.port_required)
    return make(id, check_status::pass, where, "", "",
                "the host answered (connection refused: it is up; health.node_port names a port that must listen)");
  if (f.refused)
    return make(id, check_status::fail, where, "", "", "connection refused at " + where + ": nothing listens on health.node_port");
  return make(id, check_status::fail, where, "", "", "cannot reach " + f.host + ": " + f.error);
}

check_result judge_disk_space(const disk_fact& f) {
  const std::string id = "storage.free_space";
  const uint64_t keep = uint64_t(std::max<int64_t>(f.keep, 1));
  // keep checkpoints plus the one being written before the oldest is retired.
  const uint64_t needed = f.checkpoint_bytes * (keep + 1);
  const std::string value = mib(f.free_bytes), threshold = mib(needed);
  const std::string what = std::to_string(keep + 1) + " x " + mib(f.checkpoint_bytes) + " MiB (checkpoint.keep " +
                           std::to_string(keep) + " + the one being written) under " + f.dir;
  if (f.free_bytes < needed)
    return make(id, check_status::fail, value, threshold, "MiB", "not enough free space for " + what);
  if (f.free_bytes < 2 * needed)
    return make(id, check_status::warn, value, threshold, "MiB", "less than twice the space needed for " + what);
  return make(id, check_status::pass, value, threshold, "MiB", "room for " + what);
}

check_result judge_write_speed(const write_fact& f, double min_mb_s) {
  const std::string id = "storage.write_fsync";
  if (!f.error.empty()) return make(id, check_status::fail, "", num(min_mb_s), "MB/s", f.error);
  const double mb_s = f.seconds > 0 ? double(f.bytes) / 1e6 / f.seconds : std::numeric_limits<double>::infinity();
  const bool ok = mb_s >= min_mb_s;
  return make(id, ok ? check_status::pass : check_status::warn, num(mb_s), num(min_mb_s), "MB/s",
              mib(f.bytes) + " MiB written and fsynced in " + f.dir +
                  (ok ? "" : ": checkpoints will take long to write"));
}

check_result judge_latest_checkpoint(const checkpoint_fact& f) {
  const std::string id = "storage.checkpoint.latest";
  if (!f.root_exists) return skipped(id, "no checkpoint root yet: a fresh start");
  if (!f.verify_error.empty())
    return make(id, check_status::fail, "", "", "step", "the checkpoint root cannot be read: " + f.verify_error);
  if (!f.loaded_step && f.skipped.empty()) return skipped(id, "no checkpoint in the root: a fresh start");
  std::string why;
  for (size_t i = 0; i < f.skipped.size() && i < 3; ++i) why += (i ? "; " : "") + f.skipped[i];
  if (f.skipped.size() > 3) why += "; and " + std::to_string(f.skipped.size() - 3) + " more";
  if (!f.loaded_step)
    return make(id, check_status::fail, "none", "", "step",
                "no checkpoint verifies (" + why +
                    "): a resume would start over from step 0 and replace them; msomni ckpt verify lists every "
                    "problem, --fresh or another --run-dir starts a new run");
  const std::string loaded = std::to_string(*f.loaded_step);
  if (!f.skipped.empty())
    return make(id, check_status::warn, loaded, "", "step",
                "the newest checkpoint does not verify (" + why + "); the run resumes from step " + loaded +
                    ", the newest that does (msomni ckpt verify lists every problem)");
  return make(id, check_status::pass, loaded, "", "step", "every shard and checksum verified");
}

check_result judge_resume_config(const checkpoint_fact& f) {
  const std::string id = "storage.checkpoint.config";
  if (!f.root_exists || !f.loaded_step) return skipped(id, "no checkpoint to resume from");
  if (!f.config_known) return skipped(id, "the checkpoint records no config");
  if (f.refused_keys.empty())
    return make(id, check_status::pass, "0", "0", "refused keys", "this config may resume from it");
  std::string keys;
  for (const auto& k : f.refused_keys) keys += (keys.empty() ? "" : ", ") + k;
  return make(id, check_status::fail, std::to_string(f.refused_keys.size()), "0", "refused keys",
              "a resume may not change " + keys + " (start over with --fresh or another --run-dir)");
}

check_result judge_stale_temps(bool root_exists, const std::vector<std::string>& temporaries) {
  const std::string id = "storage.temp_files";
  if (!root_exists) return skipped(id, "no checkpoint root yet");
  if (temporaries.empty()) return make(id, check_status::pass, "0", "0", "entries", "no leftover temporaries");
  std::string names;
  for (size_t i = 0; i < temporaries.size() && i < 5; ++i) names += (i ? ", " : "") + temporaries[i];
  if (temporaries.size() > 5) names += ", ...";
  return make(id, check_status::warn, std::to_string(temporaries.size()), "0", "entries",
              "temporaries of an interrupted save (" + names + "); the next commit removes them");
}

check_result judge_clock(const clock_fact& f, int64_t max_error_us) {
  const std::string id = "host.clock";
  if (f.one_host)
    return skipped(id, "one host: every event time of this job comes from this host's clock (checked when "
                       "[[cluster.nodes]] lists agents or [control] store names standbys)");
  if (!f.error.empty()) return skipped(id, "adjtimex: " + f.error);
  constexpr int time_error = 5;
  const std::string value = num(double(f.maxerror_us) / 1000.0), threshold = num(double(max_error_us) / 1000.0);
  if (f.state == time_error)
    return make(id, check_status::warn, value, threshold, "ms",
                "the kernel clock is not synchronised (adjtimex TIME_ERROR): event times of different nodes may not "
                "compare");
  if (f.maxerror_us > max_error_us)
    return make(id, check_status::warn, value, threshold, "ms", "the clock's maximum error is large");
  return make(id, check_status::pass, value, threshold, "ms", "synchronised (adjtimex)");
}

check_result judge_limit(const limit_fact& f) {
  const bool unlimited = f.soft == std::numeric_limits<uint64_t>::max();
  const std::string value = unlimited ? "unlimited" : std::to_string(f.soft);
  if (unlimited || f.soft >= f.wanted)
    return make(f.id, check_status::pass, value, std::to_string(f.wanted), "", f.what + " soft limit");
  return make(f.id, f.fail_below ? check_status::fail : check_status::warn, value, std::to_string(f.wanted), "",
              f.what + " soft limit is below what a job of this size uses (ulimit / limits.conf)");
}

check_result judge_memory(const memory_fact& f) {
  const std::string id = "host.memory";
  if (!f.error.empty()) return skipped(id, f.error);
  const uint64_t needed = f.per_rank_bytes * uint64_t(std::max<int64_t>(f.ranks_on_node, 1));
  const std::string what = std::to_string(f.ranks_on_node) + " ranks x " + mib(f.per_rank_bytes) +
                           " MiB (the model's estimate for one micro-batch)";
  if (needed > f.available_bytes)
    return make(id, check_status::fail, mib(f.available_bytes), mib(needed), "MiB",
                "MemAvailable cannot hold " + what);
  if (needed > f.available_bytes / 10 * 8)
    return make(id, check_status::warn, mib(f.available_bytes), mib(needed), "MiB",
                what + " is over 80% of MemAvailable");
  return make(id, check_status::pass, mib(f.available_bytes), mib(needed), "MiB", "room for " + what);
}

check_result judge_port(std::string id, const std::string& key, int64_t port, const std::string& problem) {
  if (port == 0) return make(std::move(id), check_status::pass, "0", "", "", key + " = 0: a free port is picked at start");
  if (!problem.empty()) return make(std::move(id), check_status::fail, std::to_string(port), "", "", key + ": " + problem);
  return make(std::move(id), check_status::pass, std::to_string(port), "", "", key + " is free");
}

check_result judge_governor(const std::optional<std::string>& governor) {
  const std::string id = "host.cpu_governor";
  if (!governor) return skipped(id, "no cpufreq governor exposed (/sys/devices/system/cpu/cpu0/cpufreq)");
  if (*governor == "performance" || *governor == "schedutil")
    return make(id, check_status::pass, *governor, "performance", "", "CPU frequency governor");
  return make(id, check_status::warn, *governor, "performance", "",
              "the CPU frequency governor may slow compute and data decoding");
}

check_result judge_store(const store_fact& f) {
  const std::string id = "store.etcd";
  if (f.url.empty()) return skipped(id, "control.store is not set: one control process, its state in the run directory");
  size_t up = 0;
  std::string down, version;
  std::set<uint64_t> leaders;
  for (const auto& m : f.members) {
    if (m.up) {
      ++up;
      version = m.version;
      leaders.insert(m.leader_id);
    } else {
      down += (down.empty() ? "" : "; ") + m.error;
    }
  }
  const size_t n = f.members.size(), quorum = n / 2 + 1;
  const auto value = std::to_string(up) + " of " + std::to_string(n) + " members";
  const auto threshold = std::to_string(quorum) + " (a quorum)";
  if (up < quorum)
    return make(id, check_status::fail, value, threshold, "", "the control store " + f.url + " has no quorum: " + down);
  if (leaders.count(0) || leaders.size() != 1)
    return make(id, check_status::fail, value, threshold, "", "the members of " + f.url + " agree on no raft leader");
  if (!f.writable) return make(id, check_status::fail, value, threshold, "", "no lease could be granted: " + f.write_error);
  if (up < n)
    return make(id, check_status::warn, value, threshold, "",
                "a quorum answers and a lease was granted, but members are down (one more lost stops the store): " + down);
  return make(id, check_status::pass, value, threshold, "", "etcd " + version + ": every member answers, a lease was granted");
}

}  // namespace msomni::health
