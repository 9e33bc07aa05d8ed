// Scheduler policy core: admission, the queue, starts, job phases, completions and what it
// reports. The scheduling passes live in scheduler_pass*.cpp, omni's critical reserve in
// scheduler_reserve.cpp, taking GPUs back (victims, notices, drains) in
// scheduler_preemption.cpp, co-location (window) in scheduler_colocation.cpp, and adopting
// rejoining jobs after a restart (adopt) in scheduler_rejoin.cpp.
#include "scheduler_core.hpp"

#include <algorithm>
#include <stdexcept>

namespace msomni::sched {

const char* to_string(job_phase p) {
  switch (p) {
    case job_phase::pending: return "pending";
    case job_phase::running: return "running";
    case job_phase::draining: return "draining";
    case job_phase::guest: return "guest";
  }
  return "?";
}

scheduler_core::scheduler_core(topology topo, scheduler_params params)
    : params_(params), place_(std::move(topo)), ended_(params.ended_jobs_capacity) {}

scheduler_core::queue_key scheduler_core::key_of(const job_state& j) const {
  return {static_cast<uint8_t>(j.req.klass), j.submit_s, j.order, j.req.id};
}

const job_state* scheduler_core::find(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second;
}

void scheduler_core::emit(double now_s, command c, std::vector<command>& out) {
  ++decisions_total_;
  if (params_.decision_log_capacity > 0) {
    if (log_.size() >= params_.decision_log_capacity) log_.pop_front();
    log_.push_back({now_s, c});
  }
  out.push_back(std::move(c));
}

explained scheduler_core::refusal(const job_request& req, bool queued) const {
  if (jobs_.count(req.id)) return {"duplicate job id", {}};
  if (req.gpus == 0 || req.gpus > place_.total())
    return std::move(reason_text("needs more GPUs than the cluster has (")
                         .num("gpus_wanted", req.gpus)
                         .add(" of ")
                         .num("gpus_total", place_.total())
                         .add(")"))
        .done();
  if (req.gpus % per_replica(req) != 0)
    return std::move(reason_text("gpus not a multiple of gpus_per_replica (")
                         .num("gpus_wanted", req.gpus)
                         .add(" by ")
                         .num("gpus_per_replica", per_replica(req))
                         .add(")"))
        .done();
  if (queued && pending_.size() >= params_.queue_capacity)
    return std::move(reason_text("queue full (queue_capacity): ")
                         .num("queued_jobs", static_cast<double>(pending_.size()))
                         .add(" of ")
                         .num("queue_capacity", static_cast<double>(params_.queue_capacity))
                         .add(" jobs"))
        .done();
  return {};
}

job_state& scheduler_core::admit(const job_request& req, double now_s) {
  job_state j;
  j.req = req;
  j.req.gpus_per_replica = per_replica(req);
  j.req.min_replicas = std::clamp<uint32_t>(req.min_replicas, 1, full_replicas(j.req));
  if (!preemptible(req.klass)) j.req.min_replicas = full_replicas(j.req);
  // A job that was in line under a previous instance keeps its place (NaN counts as now).
  const double ago = req.submitted_ago_s > 0 ? std::min(req.submitted_ago_s, job_request::max_submitted_ago_s) : 0.0;
  j.submit_s = now_s - ago;
  j.order = next_order_++;
  job_state& admitted = jobs_.emplace(req.id, j).first->second;
  ++count_of(admitted);
  return admitted;
}

std::vector<command> scheduler_core::submit(const job_request& req, double now_s) {
  std::vector<command> out;
  command rej = make_command(command_kind::reject, req.id, 0);
  set_reason(rej, refusal(req, true));
  if (!rej.reason.empty()) {
    ++rejected_;
    emit(now_s, rej, out);
    return out;
  }
  job_state& j = admit(req, now_s);
  if (const auto stopped = ended_.take_stopped(req.id)) j.resume_step = stopped->outcome.checkpoint_step;
  pending_.insert(key_of(j));
  schedule(now_s, out);
  return out;
}

void scheduler_core::start(job_state& j, uint32_t replicas, double now_s, explained reason,
                           std::vector<command>& out, bool borrowed) {
  uint32_t count = replicas * j.req.gpus_per_replica;
  auto choice = place_.choose(count);
  if (!choice) throw std::logic_error("start without enough free GPUs: " + j.req.id);
  place_.take(j.req.id, choice->gpus);
  if (!choice->single_node) ++multi_node_;
  if (!choice->single_switch) {
    ++cross_switch_;
    reason.text += "; spans switches (no single switch had room)";
  }
  pending_.erase(key_of(j));
  set_phase(j, job_phase::running);
  j.gpus = choice->gpus;
  j.replicas = replicas;
  j.run_since_s = now_s;
  j.borrowed = borrowed;
  j.guest_delay_s = 0;
  j.guest_delay_run_s = 0;
  j.delay_reported = false;
  j.over_budget = false;
  j.hold = {};
  j.hold_pass = ~uint64_t{0};
  j.hold_logged = hold_reason::none;
  j.lending_hold = j.lending_logged = hold_reason::none;
  j.lending_cause_logged = lending_cause::none;
  ++j.epoch;
  command c = make_command(command_kind::start, j.req.id, j.epoch);
  c.gpus = j.gpus;
  c.replicas = replicas;
  c.resume_step = j.resume_step;
  set_reason(c, std::move(reason));
  emit(now_s, std::move(c), out);
}

uint32_t scheduler_core::draining_gpus() const {
  uint32_t n = 0;
  for (const auto& id : draining_) {
    const job_state& j = jobs_.at(id);
    n += static_cast<uint32_t>(j.gpus.size()) - j.keep_replicas * j.req.gpus_per_replica;
  }
  return n;
}

void scheduler_core::set_phase(job_state& j, job_phase p) {
  --count_of(j);
  running_.erase(j.req.id);
  draining_.erase(j.req.id);
  if (p == job_phase::running) running_.insert(j.req.id);
  if (p == job_phase::draining) draining_.insert(j.req.id);
  j.phase = p;
  ++count_of(j);
}

void scheduler_core::erase_job(std::map<std::string, job_state>::iterator it) {
  --count_of(it->second);
  jobs_.erase(it);
}

void scheduler_core::to_pending(job_state& j) {
  set_phase(j, job_phase::pending);
  j.borrowed = false;
  j.gpus.clear();
  j.replicas = 0;
  j.host.clear();
  j.share = 0;
  j.hold_logged = hold_reason::none;
  pending_.insert(key_of(j));
}

std::vector<command> scheduler_core::finished(const std::string& job, double now_s, const job_outcome& how) {
  std::vector<command> out;
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return out;
  job_state& j = it->second;
  ended_.add({job, j.req.klass, how, now_s});
  if (j.phase == job_phase::pending) {  // it ended while it waited (preempted, or not started yet): it leaves the queue
    pending_.erase(key_of(j));
    erase_job(it);
    schedule(now_s, out);
    return out;
  }
  evict_guests_of(job, now_s, {"host finished", {}}, eviction_cause::host_ended, out);
  if (j.phase == job_phase::guest) {
    auto& list = guests_of_[j.host];
    list.erase(std::remove(list.begin(), list.end(), job), list.end());
    if (list.empty()) guests_of_.erase(j.host);
  } else {
    place_.give_back(job, j.gpus);
  }
  forecasts_.erase(job);
  set_phase(j, job_phase::pending);  // leaves the phase sets
  erase_job(it);
  schedule(now_s, out);
  return out;
}

queue_counts scheduler_core::counts() const {
  queue_counts c;
  for (const auto& key : pending_) ++c.pending_by_class[std::min<size_t>(std::get<0>(key), 2)];
  c.running = running_.size();
  for (const auto& id : running_) c.borrowed += jobs_.at(id).borrowed ? 1 : 0;
  c.draining = draining_.size();
  for (const auto& [host, guests] : guests_of_) c.guests += guests.size();
  c.rejected = rejected_;
  return c;
}

std::vector<const job_state*> scheduler_core::listing(size_t limit, size_t& total) const {
  std::vector<const job_state*> out;
  auto add = [&](const std::string& id) {
    if (out.size() < limit) out.push_back(&jobs_.at(id));
  };
  for (const auto& id : running_) add(id);
  for (const auto& id : draining_) add(id);
  for (const auto& [host, guests] : guests_of_)
    for (const auto& id : guests) add(id);
  for (const auto& key : pending_) add(std::get<3>(key));
  total = jobs_.size();
  return out;
}

bool scheduler_core::critical_starved_by_lower(double now_s) const {
  uint32_t owed = 0;
  const job_state* first = nullptr;
  for (const auto& key : pending_) {
    const job_state& j = jobs_.at(std::get<3>(key));
    if (j.req.klass != job_class::critical) break;
    owed += j.req.gpus;
    if (!first) first = &j;
  }
  if (!first || owed <= place_.free_count() + draining_gpus()) return false;
  // omni lets work that gives way at once (best-effort, borrowed runs) use GPUs a waiting
  // critical job is owed while it could not start anyway, and takes them (at once) as soon as
  // it could: starved when the first waiting critical job could start now on free GPUs and
  // those, or when they do not cover what is owed and a regular job it may take from still
  // runs without a notice.
  uint32_t at_once = params_.policy == policy_kind::omni ? gpus_giving_way(running_) : 0;
  if (at_once > 0 && place_.free_count() + at_once >= first->req.gpus &&
      place_.free_count() + draining_gpus() < first->req.gpus)
    return true;
  if (owed <= place_.free_count() + draining_gpus() + at_once) return false;
  for (const auto& id : running_) {
    const job_state& v = jobs_.at(id);
    if (at_once > 0 && gives_way_at_once(v)) continue;
    if (may_preempt(v, *first, now_s) || may_shrink(v, *first)) return true;
  }
  return false;
}

}  // namespace msomni::sched
