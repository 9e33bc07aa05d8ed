// Scheduler policy core, co-location half: once per reservation window, decide which
// preemptible jobs run as guests inside critical jobs' idle share and how large a share.
// omni lends the predictor's mean idle share minus its safety margin, and only when the
// mean passes the idle threshold with enough confidence; greedy lends whatever the last
// step left idle, with no threshold and no margin (the "no prediction" baseline).
#include "scheduler_core.hpp"

#include <algorithm>

namespace msomni::sched {

namespace {
// Pending entries looked at per host and window: keeps a window O(hosts) on long queues.
constexpr size_t guest_scan_limit = 64;
}  // namespace

double scheduler_core::guest_share(const std::string& host) const {
  auto it = forecasts_.find(host);
  if (it == forecasts_.end()) return 0;
  const host_forecast& f = it->second;
  if (params_.policy == policy_kind::greedy) return std::clamp(f.last_idle, 0.0, 1.0);
  if (params_.policy != policy_kind::omni) return 0;
  if (f.idle_mean < params_.idle_threshold || f.confidence < params_.min_confidence) return 0;
  return std::clamp(f.lendable_share, 0.0, 1.0);
}

void scheduler_core::evict_guest_of(const std::string& host, double now_s, std::string reason,
                                    std::vector<command>& out) {
  auto g = guest_of_.find(host);
  if (g == guest_of_.end()) return;
  job_state& guest = jobs_.at(g->second);
  command c = make_command(command_kind::evict_guest, guest.req.id, guest.epoch);
  c.host = host;
  c.reason = std::move(reason);
  guest_of_.erase(g);
  to_pending(guest);
  emit(now_s, std::move(c), out);
}

std::vector<command> scheduler_core::window(double now_s) {
  std::vector<command> out;
  if (params_.policy == policy_kind::exclusive) return out;
  // 1. Re-decide every guest: leave when the host's idle share is no longer lendable, or
  //    when the cluster has free room for it and nobody else waits.
  std::vector<std::string> hosts;
  for (const auto& [host, guest] : guest_of_) hosts.push_back(host);
  for (const auto& host : hosts) {
    job_state& guest = jobs_.at(guest_of_.at(host));
    double share = guest_share(host);
    if (share <= 0) {
      evict_guest_of(host, now_s, "host's predicted idle share is below the threshold", out);
    } else if (pending_.empty() && place_.free_count() >= guest.req.gpus) {
      evict_guest_of(host, now_s, "free GPUs: run alone", out);
    } else if (share != guest.share) {
      guest.share = share;
      command c = make_command(command_kind::set_share, guest.req.id, guest.epoch);
      c.host = host;
      c.share = share;
      c.reason = "share for the next reservation window";
      emit(now_s, std::move(c), out);
    }
  }
  schedule(now_s, out);  // evicted guests may fit in free GPUs now
  // 2. New guests for running critical hosts without one.
  for (const auto& host_id : running_) {
    const job_state& host = jobs_.at(host_id);
    if (host.req.klass != job_class::critical) continue;
    if (guest_of_.count(host_id) || pending_.empty()) continue;
    double share = guest_share(host_id);
    if (share <= 0) continue;
    size_t scanned = 0;
    for (const auto& key : pending_) {
      if (++scanned > guest_scan_limit) break;
      job_state& j = jobs_.at(std::get<3>(key));
      if (j.req.klass == job_class::critical || j.req.gpus > host.gpus.size()) continue;
      pending_.erase(key);
      set_phase(j, job_phase::guest);
      j.host = host_id;
      j.share = share;
      j.replicas = std::max<uint32_t>(1, j.req.gpus / j.req.gpus_per_replica);
      j.run_since_s = now_s;
      ++j.epoch;
      guest_of_[host_id] = j.req.id;
      command c = make_command(command_kind::colocate, j.req.id, j.epoch);
      c.gpus.assign(host.gpus.begin(), host.gpus.begin() + j.req.gpus);
      c.replicas = j.replicas;
      c.host = host_id;
      c.share = share;
      c.reason = params_.policy == policy_kind::omni
                     ? "host's predicted idle share passes the threshold"
                     : "greedy: host left GPUs idle in its last step";
      emit(now_s, std::move(c), out);
      break;
    }
  }
  return out;
}

}  // namespace msomni::sched
