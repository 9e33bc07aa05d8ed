// Scheduler policy core, memory half: what a job's memory forecast (its memory watermark
// predictor's, as `msomni job` reports it) means for co-location. A critical host's report
// says how much of each of its devices it will need over the forecast horizon (peak plus the
// safety margin); what is left is the headroom a guest on one of its GPUs may use. A guest
// is placed only where the headroom covers its need, and a guest the headroom no longer
// covers is evicted at once (gracefully: the evict path checkpoints and requeues it). Guests
// sit on GPUs of their own (place_guests packs each onto GPUs no other guest uses), so each
// is judged against the host's headroom alone.
#include "scheduler_core.hpp"

namespace msomni::sched {

bool scheduler_core::memory_headroom(const job_state& host, int64_t& headroom) const {
  if (host.memory_device_bytes == 0 || host.memory_forecast_bytes == 0) return false;
  headroom = static_cast<int64_t>(host.memory_device_bytes) - static_cast<int64_t>(host.memory_forecast_bytes);
  return true;
}

hold_note scheduler_core::memory_misfit(const job_state& g, const job_state& host) const {
  hold_note h;
  int64_t headroom = 0;
  if (!memory_headroom(host, headroom)) return h;
  const uint64_t need = memory_need(g);
  if (headroom >= 0 && need <= static_cast<uint64_t>(headroom)) return h;
  h.reason = hold_reason::memory;
  h.gpus_free = place_.free_count();
  h.gpus_wanted = g.req.gpus;
  h.by = host.req.id;
  h.need_bytes = need;
  h.headroom_bytes = headroom;
  h.device_bytes = host.memory_device_bytes;
  return h;
}

bool scheduler_core::evict_for_memory(const job_state& host, double now_s, std::vector<command>& out) {
  auto it = guests_of_.find(host.req.id);
  if (it == guests_of_.end()) return false;
  bool any = false;
  for (const std::string& id : std::vector<std::string>(it->second)) {
    const hold_note h = memory_misfit(jobs_.at(id), host);
    if (h.reason == hold_reason::none) continue;
    evict_guest(id, now_s, hold_explained(h), eviction_cause::memory, out);
    any = true;
  }
  return any;
}

bool scheduler_core::report_memory(const std::string& job, uint64_t forecast_peak_bytes, uint64_t device_bytes,
                                   double now_s, std::vector<command>& out) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return false;
  job_state& j = it->second;
  j.memory_forecast_bytes = forecast_peak_bytes;
  j.memory_device_bytes = device_bytes;
  bool evicted = false;
  if (j.phase == job_phase::guest) {
    if (auto h = jobs_.find(j.host); h != jobs_.end()) evicted = evict_for_memory(h->second, now_s, out);
  } else if (has_guests(job)) {
    evicted = evict_for_memory(j, now_s, out);
  }
  if (evicted) schedule(now_s, out);  // an evicted guest may fit in free GPUs now
  return true;
}

}  // namespace msomni::sched
