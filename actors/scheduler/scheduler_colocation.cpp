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

lending_figures scheduler_core::lending_figures_of(const std::string& host) const {
  lending_figures out;
  out.slowdown_budget = params_.critical_slowdown_budget;
  if (auto h = jobs_.find(host); h != jobs_.end() && h->second.delay_reported) {
    out.delay_reported = true;
    out.guest_delay_s = h->second.guest_delay_s;
    out.run_s = h->second.guest_delay_run_s;
    out.budget_s = params_.critical_slowdown_budget * out.run_s;
  }
  out.min_confidence = params_.min_confidence;
  out.idle_threshold = params_.idle_threshold;
  auto it = forecasts_.find(host);
  if (it == forecasts_.end()) return out;
  const host_forecast& f = it->second;
  out.forecast = true;
  out.confidence = f.confidence;
  out.samples = f.samples;
  out.warmup_samples = f.warmup_samples;
  out.step_cv = f.step_cv;
  // A predicted checkpoint/evaluation phase leaves the whole of its part of the window idle;
  // the rest of the window has the ordinary idle share. A host qualifies when its GPUs' idle
  // share over its rhythm passes the threshold, or when this window's does (a phase lifts it).
  const double phase = std::clamp(f.phase_share, 0.0, 1.0);
  out.window_idle = phase + (1 - phase) * f.idle_mean;
  out.rhythm_idle = f.rhythm_idle;
  out.idle_share = std::max(out.window_idle, out.rhythm_idle);
  out.lends = guest_share(host);
  return out;
}

scheduler_core::lending scheduler_core::lending_of(const std::string& host) const {
  if (auto h = jobs_.find(host); h != jobs_.end() && h->second.over_budget) return lending::over_budget;
  auto it = forecasts_.find(host);
  if (it == forecasts_.end() || it->second.confidence < params_.min_confidence) return lending::low_confidence;
  const host_forecast& f = it->second;
  // See lending_figures_of: the larger of the window's and the rhythm's idle share.
  const double phase = std::clamp(f.phase_share, 0.0, 1.0);
  const double window_idle = phase + (1 - phase) * f.idle_mean;
  if (std::max(window_idle, f.rhythm_idle) < params_.idle_threshold) return lending::below_threshold;
  return lending::qualifies;
}

hold_reason scheduler_core::lending_hold_of(const std::string& host) const {
  switch (lending_of(host)) {
    case lending::over_budget: return hold_reason::over_budget;
    case lending::low_confidence: return hold_reason::low_confidence;
    case lending::below_threshold: return hold_reason::below_threshold;
    case lending::qualifies: break;
  }
  return hold_reason::none;
}

void scheduler_core::report_guest_delay(const std::string& host, double lost_s, double now_s) {
  if (params_.policy != policy_kind::omni) return;  // only omni keeps a budget
  auto it = jobs_.find(host);
  if (it == jobs_.end()) return;
  job_state& h = it->second;
  if (h.req.klass != job_class::critical || h.phase != job_phase::running) return;
  h.guest_delay_s = std::max(0.0, lost_s);
  h.guest_delay_run_s = std::max(0.0, now_s - h.run_since_s);
  h.delay_reported = true;
  const bool over = h.guest_delay_s > params_.critical_slowdown_budget * h.guest_delay_run_s;
  if (over && !h.over_budget) ++budget_holds_;
  h.over_budget = over;
}

explained scheduler_core::no_lending_reason(const std::string& host) const {
  if (params_.policy != policy_kind::omni) {  // greedy lends whatever the last step left idle: nothing, here
    const auto it = forecasts_.find(host);
    return std::move(reason_text("greedy: host left no GPU time idle in its last step (")
                         .num("last_idle_share", it == forecasts_.end() ? 0.0 : it->second.last_idle)
                         .add(")"))
        .done();
  }
  return lending_explained(host, lending_figures_of(host), lending_hold_of(host));
}

void scheduler_core::evict_guest(const std::string& guest_id, double now_s, explained reason,
                                 eviction_cause cause, std::vector<command>& out) {
  job_state& guest = jobs_.at(guest_id);
  const std::string host = guest.host;
  auto& list = guests_of_[host];
  list.erase(std::remove(list.begin(), list.end(), guest_id), list.end());
  if (list.empty()) guests_of_.erase(host);
  command c = make_command(command_kind::evict_guest, guest.req.id, guest.epoch);
  c.host = host;
  set_reason(c, std::move(reason));
  to_pending(guest);
  guest.placed = {};
  guest.memory_hold_host.clear();
  ++evictions_[static_cast<size_t>(cause)];
  emit(now_s, std::move(c), out);
}

void scheduler_core::evict_guests_of(const std::string& host, double now_s, const explained& reason,
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
    reason_text why;
    if (params_.policy == policy_kind::omni)
      why.add("host's predicted idle share passes the threshold: ")
          .add(lending_explained(host.req.id, lending_figures_of(host.req.id), hold_reason::none));
    else
      why.add("greedy: host left GPUs idle in its last step (").num("last_idle_share", share).add(")");
    if (int64_t headroom = 0; memory_headroom(host, headroom)) {
      const uint64_t need = memory_need(j);
      why.add("; memory: the host's forecast leaves ")
          .num_as("headroom_bytes", static_cast<double>(headroom), gb_text(static_cast<double>(headroom)))
          .add(" of its ")
          .num_as("device_bytes", static_cast<double>(host.memory_device_bytes),
                  gb_text(static_cast<double>(host.memory_device_bytes)))
          .add(" device, the guest needs ")
          .num_as("need_bytes", static_cast<double>(need), gb_text(static_cast<double>(need)));
    }
    j.placed = std::move(why).done();
    c.reason = j.placed.text;
    c.figures = j.placed.figures;
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
        evict_guest(id, now_s,
                    std::move(reason_text("free GPUs: run alone (")
                                  .num("gpus_free", place_.free_count())
                                  .add(" free, it needs ")
                                  .num("gpus_wanted", guest.req.gpus)
                                  .add("; nobody waits)"))
                        .done(),
                    eviction_cause::free_gpus, out);
      } else if (share != guest.share) {
        reason_text why("share for the next reservation window: ");
        why.num("share", share).add(" (was ").num("previous_share", guest.share).add(")");
        if (params_.policy == policy_kind::omni)
          why.add("; ").add(lending_explained(host, lending_figures_of(host), hold_reason::none));
        guest.share = share;
        command c = make_command(command_kind::set_share, guest.req.id, guest.epoch);
        c.host = host;
        c.share = share;
        set_reason(c, std::move(why).done());
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
