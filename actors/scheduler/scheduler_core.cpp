// Scheduler policy core: queue order, starts, reclaiming GPUs for higher classes, drains.
// Co-location (window) lives in scheduler_colocation.cpp, adopting rejoining jobs after a
// restart (adopt) in scheduler_rejoin.cpp.
#include "scheduler_core.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace msomni::sched {

namespace {
bool preemptible(job_class c) { return c != job_class::critical; }
}  // namespace

scheduler_core::scheduler_core(topology topo, scheduler_params params)
    : params_(params), place_(std::move(topo)) {}

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

std::string scheduler_core::refusal(const job_request& req, bool queued) const {
  if (jobs_.count(req.id)) return "duplicate job id";
  if (req.gpus == 0 || req.gpus > place_.total()) return "needs more GPUs than the cluster has";
  if (req.gpus % per_replica(req) != 0) return "gpus not a multiple of gpus_per_replica";
  if (queued && pending_.size() >= params_.queue_capacity) return "queue full (queue_capacity)";
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
  return jobs_.emplace(req.id, j).first->second;
}

std::vector<command> scheduler_core::submit(const job_request& req, double now_s) {
  std::vector<command> out;
  command rej = make_command(command_kind::reject, req.id, 0);
  rej.reason = refusal(req, true);
  if (!rej.reason.empty()) {
    ++rejected_;
    emit(now_s, rej, out);
    return out;
  }
  pending_.insert(key_of(admit(req, now_s)));
  schedule(now_s, out);
  return out;
}

void scheduler_core::start(job_state& j, uint32_t replicas, double now_s, std::string reason,
                           std::vector<command>& out, bool borrowed) {
  uint32_t count = replicas * j.req.gpus_per_replica;
  auto choice = place_.choose(count);
  if (!choice) throw std::logic_error("start without enough free GPUs: " + j.req.id);
  place_.take(j.req.id, choice->gpus);
  if (!choice->single_node) ++multi_node_;
  if (!choice->single_switch) {
    ++cross_switch_;
    reason += "; spans switches (no single switch had room)";
  }
  pending_.erase(key_of(j));
  set_phase(j, job_phase::running);
  j.gpus = choice->gpus;
  j.replicas = replicas;
  j.run_since_s = now_s;
  j.borrowed = borrowed;
  j.guest_delay_s = 0;
  j.over_budget = false;
  ++j.epoch;
  command c = make_command(command_kind::start, j.req.id, j.epoch);
  c.gpus = j.gpus;
  c.replicas = replicas;
  c.reason = std::move(reason);
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

// Critical demand (GPUs held or wanted by critical jobs), remembered as a sliding-window
// maximum over critical_peak_memory_s (critical_peak_now_).
void scheduler_core::note_critical_demand(double now_s) {
  if (params_.policy != policy_kind::omni || params_.critical_peak_memory_s <= 0) return;
  uint32_t demand = 0;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.req.klass == job_class::critical) demand += static_cast<uint32_t>(j.gpus.size());
  }
  for (const auto& key : pending_) {
    if (std::get<0>(key) != static_cast<uint8_t>(job_class::critical)) break;
    demand += jobs_.at(std::get<3>(key)).req.gpus;
  }
  while (!critical_peak_.empty() && critical_peak_.back().second <= demand) critical_peak_.pop_back();
  critical_peak_.emplace_back(now_s, demand);
  while (critical_peak_.front().first < now_s - params_.critical_peak_memory_s ||
         critical_peak_.size() > params_.critical_peak_samples)
    critical_peak_.pop_front();
  critical_peak_now_ = static_cast<uint32_t>(
      std::ceil(critical_peak_.front().second * std::max(params_.critical_reserve_factor, 0.0)));
}

// GPUs a critical job could not get back at once: every GPU a running regular job holds
// (inside its run window it keeps them; past it, or to shrink, it drains first, and a
// drain of minutes is a large slowdown for a short critical job). Best-effort gives way at
// once and free GPUs are free.
uint32_t scheduler_core::locked_regular_gpus() const {
  uint32_t n = 0;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.req.klass == job_class::regular && !j.borrowed) n += static_cast<uint32_t>(j.gpus.size());
  }
  return n;
}

// GPUs regular jobs may still take beside omni's reserve for critical jobs (no bound when
// there is no reserve). Computed once per pass; starts and growth take from it.
int64_t scheduler_core::regular_room() const {
  if (params_.policy != policy_kind::omni || params_.critical_peak_memory_s <= 0)
    return std::numeric_limits<int64_t>::max() / 2;
  return std::max<int64_t>(int64_t{place_.total()} - critical_peak_now_ - locked_regular_gpus(), 0);
}

void scheduler_core::schedule(double now_s, std::vector<command>& out) {
  last_schedule_s_ = now_s;
  note_critical_demand(now_s);
  if (pending_.empty()) {
    grow(now_s, out);
    return;
  }
  int64_t regular_room = this->regular_room();
  uint32_t free_now = place_.free_count();
  // GPUs that are free or will be once the notices already sent are answered; a blocked
  // job claims its share of them so that one drain is not promised to two jobs.
  int64_t pool = static_cast<int64_t>(free_now) + draining_gpus();
  // omni: GPUs of running jobs that give way at once (best-effort, borrowed): a blocked critical job
  // counts them as its own without evicting them until that lets it start (claimed in queue
  // order within the pass).
  int64_t at_once = params_.policy == policy_kind::omni ? gpus_giving_way(running_) : 0;
  bool any_blocked = false, critical_blocked = false;
  // start() erases only the entry being looked at, so step past it first.
  for (auto it = pending_.begin(), next = it; it != pending_.end(); it = next) {
    ++next;
    if (params_.policy == policy_kind::exclusive && any_blocked) break;  // strict priority
    job_state& j = jobs_.at(std::get<3>(*it));
    // A waiting critical job keeps every lower class out of the GPUs it is owed, except
    // (omni) that preemptible work may borrow free GPUs the critical job cannot use yet, on
    // best-effort terms: it gives them back at once, and a regular job's run window does not
    // cover a borrowed run.
    if (critical_blocked && j.req.klass != job_class::critical) {
      if (params_.policy != policy_kind::omni) break;
      uint32_t r = std::min(full_replicas(j.req), free_now / j.req.gpus_per_replica);
      if (r >= j.req.min_replicas && r > 0) {
        start(j, r, now_s,
              "borrows free GPUs a waiting critical job cannot use yet (" + std::to_string(r) + " of " +
                  std::to_string(full_replicas(j.req)) + " replicas; gives them back at once" +
                  (j.req.klass == job_class::regular ? ", outside its run window)" : ")"),
              out, true);
        free_now -= r * j.req.gpus_per_replica;
      }
      continue;
    }
    // Behind a blocked job only work that gives way at once may fill in (omni); greedy
    // fills with anything preemptible. A critical job is never skipped here: behind another
    // blocked critical job it still starts in GPUs nobody was promised (`usable`) or
    // reclaims its own share from lower classes -- skipping it left it waiting on regular
    // jobs past their run window (critical_starvation_events on ITP traces).
    if (any_blocked && params_.policy == policy_kind::omni &&
        j.req.klass == job_class::regular)
      continue;
    uint32_t need = j.req.gpus;
    uint32_t gpr = j.req.gpus_per_replica;
    uint32_t min_need = j.req.min_replicas * gpr;
    int64_t usable = std::min<int64_t>(free_now, std::max<int64_t>(pool, 0));
    // omni: a regular job holds its GPUs through a run window and gives them back only after
    // a drain, so it may only take what critical demand left unused at its recent peak. It
    // starts smaller to fit beside that reserve, or waits without blocking those behind it.
    const bool regular = j.req.klass == job_class::regular;
    if (regular && regular_room < need) {
      int64_t fit = std::min<int64_t>(usable, regular_room);
      if (!any_blocked && fit >= min_need) {
        uint32_t r = static_cast<uint32_t>(fit / gpr);
        start(j, r, now_s,
              "elastic start at " + std::to_string(r) + " of " + std::to_string(full_replicas(j.req)) +
                  " replicas beside the critical reserve",
              out);
        free_now -= r * gpr;
        pool -= r * gpr;
        regular_room -= r * gpr;
      } else if (!any_blocked && usable >= min_need) {
        // The reserve is kept for critical bursts; until one comes the job borrows it on
        // best-effort terms (gives it back at once, outside its run window).
        uint32_t r = std::min(full_replicas(j.req), static_cast<uint32_t>(usable / gpr));
        start(j, r, now_s,
              "borrows the critical reserve (" + std::to_string(r) + " of " + std::to_string(full_replicas(j.req)) +
                  " replicas; gives it back at once, outside its run window)",
              out, true);
        free_now -= r * gpr;
        pool -= r * gpr;
      } else {
        ++reserve_deferrals_;
      }
      continue;
    }
    if (usable >= need) {
      if (regular) regular_room -= need;
      start(j, full_replicas(j.req), now_s,
            any_blocked ? "backfill: fits in free GPUs behind a blocked job" : "fits in free GPUs",
            out);
      free_now -= need;
      pool -= need;
      continue;
    }
    if (params_.policy == policy_kind::omni && preemptible(j.req.klass) && !any_blocked &&
        usable >= min_need) {
      uint32_t r = static_cast<uint32_t>(usable / gpr);
      start(j, r, now_s,
            "elastic start at " + std::to_string(r) + " of " +
                std::to_string(full_replicas(j.req)) + " replicas (cluster full)",
            out);
      free_now -= r * gpr;
      pool -= r * gpr;
      if (regular) regular_room -= r * gpr;
      continue;
    }
    if (params_.policy == policy_kind::omni && j.req.klass == job_class::critical) {
      // GPUs that borrowers are already giving back arrive at once, like free ones.
      const int64_t given_back = critical_blocked ? 0 : gpus_giving_way(draining_);
      const int64_t instant = int64_t{free_now} + given_back;
      if (!critical_blocked && instant + at_once >= need) {
        // It can start now: evict jobs that give way at once and keep the free part for it.
        // Only the first blocked critical job evicts: one behind it would free GPUs that the
        // first one claims again in the next pass, while borrowers refilled the rest.
        int64_t deficit = need - instant;
        uint32_t got = deficit > 0 ? reclaim(j, static_cast<uint32_t>(deficit), now_s, out, victims::at_once) : 0;
        at_once -= got;
        pool += got;
        free_now -= static_cast<uint32_t>(std::clamp<int64_t>(need - given_back - got, 0, free_now));
      } else {
        // It waits for drains or other jobs: borrowers keep running on what it is owed
        // until then; regular jobs start draining now, since their drain takes minutes.
        int64_t from_borrowers = std::clamp<int64_t>(need - std::max<int64_t>(pool, 0), 0, at_once);
        at_once -= from_borrowers;
        int64_t deficit = need - std::max<int64_t>(pool, 0) - from_borrowers;
        if (deficit > 0) pool += reclaim(j, static_cast<uint32_t>(deficit), now_s, out, victims::draining);
        pool += from_borrowers;
      }
    } else if (params_.policy != policy_kind::exclusive && pool < need) {
      pool += reclaim(j, static_cast<uint32_t>(need - std::max<int64_t>(pool, 0)), now_s, out, victims::any);
    }
    pool -= need;
    any_blocked = true;
    if (j.req.klass == job_class::critical) critical_blocked = true;
  }
  if (!any_blocked) grow(now_s, out);
}

void scheduler_core::grow(double now_s, std::vector<command>& out) {
  if (params_.policy != policy_kind::omni) return;
  std::vector<queue_key> running;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.replicas < full_replicas(j.req)) running.push_back(key_of(j));
  }
  std::sort(running.begin(), running.end());
  int64_t regular_room = this->regular_room();
  for (const auto& key : running) {
    job_state& j = jobs_.at(std::get<3>(key));
    const bool regular = j.req.klass == job_class::regular;
    uint32_t room = regular ? static_cast<uint32_t>(std::clamp<int64_t>(regular_room, 0, place_.total()))
                            : place_.total();
    uint32_t add = std::min({full_replicas(j.req) - j.replicas, place_.free_count() / j.req.gpus_per_replica,
                             room / j.req.gpus_per_replica});
    if (add == 0) continue;
    auto choice = place_.choose_near(add * j.req.gpus_per_replica, j.gpus);
    if (!choice) continue;
    place_.take(j.req.id, choice->gpus);
    j.gpus.insert(j.gpus.end(), choice->gpus.begin(), choice->gpus.end());
    j.replicas += add;
    if (regular) regular_room -= int64_t{add} * j.req.gpus_per_replica;
    command c = make_command(command_kind::resize, j.req.id, j.epoch);
    c.gpus = j.gpus;
    c.replicas = j.replicas;
    c.reason = "grow: free GPUs and nobody waiting";
    emit(now_s, std::move(c), out);
  }
}

bool scheduler_core::may_preempt(const job_state& v, const job_state& claimant, double now_s) const {
  if (v.phase != job_phase::running || v.req.klass <= claimant.req.klass) return false;
  if (params_.policy == policy_kind::greedy) return true;  // greedy ignores the run window
  if (gives_way_at_once(v)) return true;
  return now_s - v.run_since_s >= params_.min_run_window_s;
}

bool scheduler_core::may_shrink(const job_state& v, const job_state& claimant) const {
  return params_.policy == policy_kind::omni && v.phase == job_phase::running && !v.borrowed &&
         v.req.klass > claimant.req.klass && v.replicas > v.req.min_replicas;
}

uint32_t scheduler_core::gpus_giving_way(const std::set<std::string>& ids) const {
  uint32_t n = 0;
  for (const auto& id : ids) {
    const job_state& j = jobs_.at(id);
    if (gives_way_at_once(j)) n += static_cast<uint32_t>(j.gpus.size());
  }
  return n;
}

uint32_t scheduler_core::reclaim(const job_state& claimant, uint32_t deficit, double now_s,
                                 std::vector<command>& out, victims which) {
  // Plan first: cheapest victims first (best-effort, then borrowed regular runs, then
  // shrinking regular jobs that keep running, then whole regular jobs past their run
  // window), newest first within a kind so the least work is put at risk.
  struct cand { int kind; double since; std::string id; uint32_t gain; uint32_t keep; };
  std::vector<cand> cands;
  if (claimant.req.klass == job_class::best_effort) return 0;  // nothing ranks below it
  for (const auto& id : running_) {
    const job_state& v = jobs_.at(id);
    uint32_t held = static_cast<uint32_t>(v.gpus.size());
    const bool at_once = gives_way_at_once(v);
    if ((which == victims::at_once && !at_once) || (which == victims::draining && at_once)) continue;
    if (at_once && may_preempt(v, claimant, now_s))
      cands.push_back({v.req.klass == job_class::best_effort ? 0 : 1, -v.run_since_s, id, held, 0});
    else if (may_shrink(v, claimant))
      cands.push_back({2, -v.run_since_s, id, (v.replicas - v.req.min_replicas) * v.req.gpus_per_replica,
                       v.req.min_replicas});
    else if (may_preempt(v, claimant, now_s))
      cands.push_back({3, -v.run_since_s, id, held, 0});
  }
  std::sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) {
    return std::tie(a.kind, a.since, a.id) < std::tie(b.kind, b.since, b.id);
  });
  std::vector<const cand*> chosen;
  uint32_t gained = 0;
  for (const auto& c : cands) {
    if (gained >= deficit) break;
    chosen.push_back(&c);
    gained += c.gain;
  }
  // A regular claimant only disturbs others when that actually makes room; a critical one
  // takes what there is, since every GPU reclaimed now shortens its wait.
  if (gained < deficit && claimant.req.klass != job_class::critical) return 0;
  for (const cand* c : chosen) {
    job_state& v = jobs_.at(c->id);
    std::string why = (c->keep > 0 ? "shrink to " + std::to_string(c->keep) + " replicas for " : "make room for ") +
                      std::string(to_string(claimant.req.klass)) + " job " + claimant.req.id;
    notice(v, c->keep, now_s, std::move(why), out);
  }
  return gained;
}

void scheduler_core::notice(job_state& v, uint32_t keep, double now_s, std::string reason,
                            std::vector<command>& out) {
  double drain = gives_way_at_once(v) ? params_.best_effort_drain_s : params_.drain_period_s;
  set_phase(v, job_phase::draining);
  v.keep_replicas = keep;
  v.drain_deadline_s = now_s + drain;
  ++v.epoch;
  command c = make_command(command_kind::preempt, v.req.id, v.epoch);
  c.keep_replicas = keep;
  c.drain_s = drain;
  c.reason = std::move(reason);
  emit(now_s, std::move(c), out);
}

void scheduler_core::set_phase(job_state& j, job_phase p) {
  running_.erase(j.req.id);
  draining_.erase(j.req.id);
  if (p == job_phase::running) running_.insert(j.req.id);
  if (p == job_phase::draining) draining_.insert(j.req.id);
  j.phase = p;
}

void scheduler_core::to_pending(job_state& j) {
  set_phase(j, job_phase::pending);
  j.borrowed = false;
  j.gpus.clear();
  j.replicas = 0;
  j.host.clear();
  j.share = 0;
  pending_.insert(key_of(j));
}

void scheduler_core::complete_drain(job_state& v, double now_s) {
  uint32_t keep = v.keep_replicas * v.req.gpus_per_replica;
  std::vector<uint32_t> gone(v.gpus.begin() + std::min<size_t>(keep, v.gpus.size()), v.gpus.end());
  place_.give_back(v.req.id, gone);
  v.gpus.resize(std::min<size_t>(keep, v.gpus.size()));
  if (v.keep_replicas > 0) {
    set_phase(v, job_phase::running);  // shrunk, still running: its run window goes on
    v.replicas = v.keep_replicas;
  } else {
    ++v.preemptions;
    to_pending(v);
  }
  v.keep_replicas = 0;
}

std::vector<command> scheduler_core::released(const std::string& job, uint64_t epoch, double now_s) {
  std::vector<command> out;
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.phase != job_phase::draining || it->second.epoch != epoch)
    return out;  // repeated or stale: already handled
  complete_drain(it->second, now_s);
  schedule(now_s, out);
  return out;
}

std::vector<command> scheduler_core::expire(double now_s) {
  std::vector<command> out;
  for (const std::string& id : std::vector<std::string>(draining_.begin(), draining_.end())) {
    job_state& v = jobs_.at(id);
    if (v.drain_deadline_s > now_s) continue;
    command c = make_command(command_kind::force_release, id, v.epoch);
    c.keep_replicas = v.keep_replicas;
    c.reason = "no job_released within the drain period";
    emit(now_s, std::move(c), out);
    complete_drain(v, now_s);
  }
  schedule(now_s, out);
  return out;
}

double scheduler_core::next_deadline_s() const {
  double best = -1;
  for (const auto& id : draining_) {
    const job_state& v = jobs_.at(id);
    if (best < 0 || v.drain_deadline_s < best) best = v.drain_deadline_s;
  }
  return best;
}

double scheduler_core::next_window_end_s() const {
  if (pending_.empty() || std::get<0>(*pending_.begin()) != static_cast<uint8_t>(job_class::critical) ||
      params_.policy == policy_kind::exclusive)
    return -1;
  double best = -1;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.req.klass != job_class::regular) continue;
    double end = j.run_since_s + params_.min_run_window_s;
    if (end > last_schedule_s_ && (best < 0 || end < best)) best = end;
  }
  return best;
}

std::vector<command> scheduler_core::finished(const std::string& job, double now_s) {
  std::vector<command> out;
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return out;
  job_state& j = it->second;
  if (j.phase == job_phase::pending) return out;  // a late report of a job that was preempted
  evict_guests_of(job, now_s, "host finished", out);
  if (j.phase == job_phase::guest) {
    auto& list = guests_of_[j.host];
    list.erase(std::remove(list.begin(), list.end(), job), list.end());
    if (list.empty()) guests_of_.erase(j.host);
  } else {
    place_.give_back(job, j.gpus);
  }
  forecasts_.erase(job);
  set_phase(j, job_phase::pending);  // leaves the phase sets
  jobs_.erase(it);
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
