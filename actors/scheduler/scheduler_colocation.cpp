// Scheduler policy core, co-location half: once per reservation window, decide which
// preemptible jobs run as guests inside critical jobs' idle share and how large a share.
// omni lends the predictor's mean idle share minus its safety margin, plus whatever part of
// the window a predicted checkpoint/evaluation phase surely covers, and only when the job's
// idle share over its rhythm (phases included) or the window's predicted idle share passes
// the idle threshold, with enough confidence, and while the host is inside its slowdown
// budget; greedy lends whatever the last step left idle, with no threshold, no margin and
// no budget (the "no prediction" baseline).
#include "scheduler_core.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

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
  if (params_.policy != policy_kind::omni || lending_of(host) != lending::qualifies) return 0;
  const double phase = std::clamp(f.phase_share, 0.0, 1.0);
  return std::clamp(phase + (1 - phase) * f.lendable_share, 0.0, 1.0);
}

scheduler_core::lending scheduler_core::lending_of(const std::string& host) const {
  if (auto h = jobs_.find(host); h != jobs_.end() && h->second.over_budget) return lending::over_budget;
  auto it = forecasts_.find(host);
  if (it == forecasts_.end() || it->second.confidence < params_.min_confidence) return lending::low_confidence;
  const host_forecast& f = it->second;
  // A predicted checkpoint/evaluation phase leaves the whole of its part of the window idle;
  // the rest of the window has the ordinary idle share. A host qualifies when its GPUs' idle
  // share over its rhythm passes the threshold, or when this window's does (a phase lifts it).
  const double phase = std::clamp(f.phase_share, 0.0, 1.0);
  const double window_idle = phase + (1 - phase) * f.idle_mean;
  if (std::max(window_idle, f.rhythm_idle) < params_.idle_threshold) return lending::below_threshold;
  return lending::qualifies;
}

void scheduler_core::report_guest_delay(const std::string& host, double lost_s, double now_s) {
  if (params_.policy != policy_kind::omni) return;  // only omni keeps a budget
  auto it = jobs_.find(host);
  if (it == jobs_.end()) return;
  job_state& h = it->second;
  if (h.req.klass != job_class::critical || h.phase != job_phase::running) return;
  h.guest_delay_s = std::max(0.0, lost_s);
  const bool over = h.guest_delay_s > params_.critical_slowdown_budget * std::max(0.0, now_s - h.run_since_s);
  if (over && !h.over_budget) ++budget_holds_;
  h.over_budget = over;
}

std::string scheduler_core::no_lending_reason(const std::string& host) const {
  if (lending_of(host) != lending::over_budget) return "host's predicted idle share is below the threshold";
  char buf[160];
  std::snprintf(buf, sizeof buf, "host lost %.0f s of its run to guests, past its %.2g%% slowdown budget",
                jobs_.at(host).guest_delay_s, params_.critical_slowdown_budget * 100);
  return buf;
}

void scheduler_core::evict_guest(const std::string& guest_id, double now_s, std::string reason,
                                 eviction_cause cause, std::vector<command>& out) {
  job_state& guest = jobs_.at(guest_id);
  const std::string host = guest.host;
  auto& list = guests_of_[host];
  list.erase(std::remove(list.begin(), list.end(), guest_id), list.end());
  if (list.empty()) guests_of_.erase(host);
  command c = make_command(command_kind::evict_guest, guest.req.id, guest.epoch);
  c.host = host;
  c.reason = std::move(reason);
  to_pending(guest);
  guest.memory_hold_host.clear();
  ++evictions_[static_cast<size_t>(cause)];
  emit(now_s, std::move(c), out);
}

void scheduler_core::evict_guests_of(const std::string& host, double now_s, const std::string& reason,
                                     eviction_cause cause, std::vector<command>& out) {
  auto it = guests_of_.find(host);
  if (it == guests_of_.end()) return;
  for (const std::string& g : std::vector<std::string>(it->second)) evict_guest(g, now_s, reason, cause, out);
}

// Packs pending preemptible jobs into the host's GPUs that no guest uses yet, in queue order
// (a job too big for what is left is skipped, a smaller one behind it may still fit). With a
// memory forecast of the host, a job whose need passes its headroom is skipped too (a memory
// hold, logged once per job and host).
void scheduler_core::place_guests(const job_state& host, double share, double now_s,
                                  std::vector<command>& out) {
  std::vector<uint32_t> unused = host.gpus;
  if (auto it = guests_of_.find(host.req.id); it != guests_of_.end())
    for (const std::string& g : it->second)
      for (uint32_t gpu : jobs_.at(g).gpus) unused.erase(std::remove(unused.begin(), unused.end(), gpu), unused.end());
  // Critical jobs sort first and never become guests: the scan starts behind them, so a
  // long critical queue cannot hide the preemptible jobs from it.
  size_t scanned = 0;
  auto first_guest = pending_.lower_bound(
      queue_key{static_cast<uint8_t>(job_class::regular), -std::numeric_limits<double>::infinity(), 0, ""});
  for (auto it = first_guest, next = it; it != pending_.end() && !unused.empty(); it = next) {
    ++next;
    if (++scanned > guest_scan_limit) break;
    job_state& j = jobs_.at(std::get<3>(*it));
    if (j.req.klass == job_class::critical || j.req.gpus > unused.size()) continue;
    if (hold_note h = memory_misfit(j, host); h.reason != hold_reason::none) {
      ++memory_skips_;
      j.hold = h;  // sched-status says why until the next pass
      j.hold_pass = pass_;
      if (j.memory_hold_host != host.req.id) {
        j.memory_hold_host = host.req.id;
        emit_hold(now_s, j.req.id, j.epoch, h, out, "not placed as a guest: ");
      }
      continue;
    }
    pending_.erase(it);
    set_phase(j, job_phase::guest);
    j.host = host.req.id;
    j.share = share;
    j.replicas = full_replicas(j.req);
    j.gpus.assign(unused.begin(), unused.begin() + j.req.gpus);
    unused.erase(unused.begin(), unused.begin() + j.req.gpus);
    j.run_since_s = now_s;
    ++j.epoch;
    guests_of_[host.req.id].push_back(j.req.id);
    command c = make_command(command_kind::colocate, j.req.id, j.epoch);
    c.gpus = j.gpus;
    c.replicas = j.replicas;
    c.host = host.req.id;
    c.share = share;
    c.reason = params_.policy == policy_kind::omni
                   ? "host's predicted idle share passes the threshold"
                   : "greedy: host left GPUs idle in its last step";
    if (int64_t headroom = 0; memory_headroom(host, headroom))
      c.reason += "; memory: the host's forecast leaves " + gb_text(static_cast<double>(headroom)) + " of its " +
                  gb_text(static_cast<double>(host.memory_device_bytes)) + " device, the guest needs " +
                  gb_text(static_cast<double>(memory_need(j)));
    j.memory_hold_host.clear();
    emit(now_s, std::move(c), out);
  }
}

std::vector<command> scheduler_core::window(double now_s) {
  std::vector<command> out;
  if (params_.policy == policy_kind::exclusive) return out;
  // Critical hosts that lend nothing in this window because their guests cost them their
  // slowdown budget (report_guest_delay came first).
  for (const auto& id : running_) {
    const job_state& h = jobs_.at(id);
    if (h.req.klass == job_class::critical && h.over_budget) ++budget_hold_windows_;
  }
  // 1. Re-decide every guest: leave when the host's idle share is no longer lendable, or
  //    when the cluster has free room for it and nobody else waits.
  std::vector<std::string> hosts;
  for (const auto& [host, guests] : guests_of_) hosts.push_back(host);
  for (const auto& host : hosts) {
    double share = guest_share(host);
    if (share <= 0) {
      evict_guests_of(host, now_s, no_lending_reason(host), eviction_cause::lending, out);
      continue;
    }
    for (const std::string& id : std::vector<std::string>(guests_of_.at(host))) {
      job_state& guest = jobs_.at(id);
      if (pending_.empty() && place_.free_count() >= guest.req.gpus) {
        evict_guest(id, now_s, "free GPUs: run alone", eviction_cause::free_gpus, out);
      } else if (share != guest.share) {
        guest.share = share;
        command c = make_command(command_kind::set_share, guest.req.id, guest.epoch);
        c.host = host;
        c.share = share;
        c.reason = "share for the next reservation window";
        emit(now_s, std::move(c), out);
      }
    }
  }
  schedule(now_s, out);  // evicted guests may fit in free GPUs now
  // 2. Fill the unused GPUs of running critical hosts with guests.
  for (const auto& host_id : running_) {
    if (pending_.empty()) break;
    const job_state& host = jobs_.at(host_id);
    if (host.req.klass != job_class::critical) continue;
    double share = guest_share(host_id);
    if (share > 0) place_guests(host, share, now_s, out);
  }
  note_lending(now_s, out);
  return out;
}

}  // namespace msomni::sched
