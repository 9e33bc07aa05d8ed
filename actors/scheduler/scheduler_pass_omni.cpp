// omni's scheduling pass: elastic starts, a reserve for critical bursts that regular jobs
// may only borrow, work that gives way at once filling GPUs a waiting critical job cannot
// use yet, and reclaiming for critical jobs with the least disturbance; then growth of
// shrunk jobs when nobody waits.
#include "scheduler_core.hpp"

#include <algorithm>

namespace msomni::sched {

void scheduler_core::schedule_omni(double now_s, std::vector<command>& out) {
  note_critical_demand(now_s);
  if (pending_.empty()) {
    grow(now_s, out);
    return;
  }
  omni_pass p;
  static_cast<pass_state&>(p) = pass_begin();
  p.regular_room = regular_room();
  p.at_once = gpus_giving_way(running_);
  // start() erases only the entry being looked at, so step past it first.
  for (auto it = pending_.begin(), next = it; it != pending_.end(); it = next) {
    ++next;
    job_state& j = jobs_.at(std::get<3>(*it));
    const bool regular = j.req.klass == job_class::regular;
    if (p.critical_blocked && j.req.klass != job_class::critical) {
      omni_borrow_while_critical_waits(j, p, now_s, out);
      continue;
    }
    // Behind a blocked job only work that gives way at once may fill in. A critical job is
    // never skipped here: behind another blocked critical job it still starts in GPUs
    // nobody was promised (`usable`) or reclaims its own share from lower classes, so that
    // it does not wait on regular jobs past their run window.
    if (p.any_blocked && regular) {
      set_hold(j, {hold_reason::queue_order, p.free_now, j.req.gpus, 0, p.first_blocked}, now_s, out);
      continue;
    }
    // A regular job holds its GPUs through a run window and gives them back only after a
    // drain, so it may only take what critical demand left unused at its recent peak.
    if (regular && p.regular_room < j.req.gpus) {
      omni_start_beside_reserve(j, p, now_s, out);
      continue;
    }
    if (start_if_fits(j, p, now_s, out)) {
      if (regular) p.regular_room -= j.req.gpus;
      continue;
    }
    if (omni_start_elastic(j, p, now_s, out)) continue;
    if (j.req.klass == job_class::critical) omni_claim_for_critical(j, p, now_s, out);
    else reclaim_shortfall(j, p, now_s, out);
    set_hold(j, waiting_hold(j, p), now_s, out);
    block(j, p);
  }
  if (!p.any_blocked) grow(now_s, out);
}

// A waiting critical job keeps every lower class out of the GPUs it is owed, except that
// preemptible work may borrow free GPUs the critical job cannot use yet, on best-effort
// terms: it gives them back at once, and a regular job's run window does not cover a
// borrowed run.
void scheduler_core::omni_borrow_while_critical_waits(job_state& j, omni_pass& p, double now_s,
                                                      std::vector<command>& out) {
  uint32_t r = std::min(full_replicas(j.req), p.free_now / j.req.gpus_per_replica);
  if (r < j.req.min_replicas || r == 0) {
    set_hold(j, {hold_reason::critical_waits, p.free_now, j.req.min_replicas * j.req.gpus_per_replica, 0,
                 p.first_critical_blocked},
             now_s, out);
    return;
  }
  reason_text why("borrows free GPUs a waiting critical job cannot use yet (");
  why.num("replicas", r).add(" of ").num("full_replicas", full_replicas(j.req)).add(" replicas on ");
  why.num("gpus_free", p.free_now).add(" free GPUs while " + p.first_critical_blocked + " waits; gives them back at once");
  why.add(j.req.klass == job_class::regular ? ", outside its run window)" : ")");
  start(j, r, now_s, std::move(why).done(), out, true);
  p.free_now -= r * j.req.gpus_per_replica;
}

// A regular job larger than the room beside the critical reserve starts smaller to fit
// beside it, or borrows the reserve, or waits without blocking those behind it.
void scheduler_core::omni_start_beside_reserve(job_state& j, omni_pass& p, double now_s,
                                               std::vector<command>& out) {
  const uint32_t gpr = j.req.gpus_per_replica;
  const uint32_t min_need = j.req.min_replicas * gpr;
  const int64_t usable = p.usable();
  const int64_t fit = std::min<int64_t>(usable, p.regular_room);
  // "(regular jobs may lock 4 more GPUs beside the 8 kept for critical bursts, 12 free)"
  const auto room = [&](reason_text& why) -> reason_text& {
    return why.add("regular jobs may lock ")
        .num("regular_room_gpus", static_cast<double>(std::max<int64_t>(p.regular_room, 0)))
        .add(" more GPUs beside the ")
        .num("reserve_gpus", critical_peak_now_)
        .add(" kept for critical bursts, ")
        .num("gpus_free", static_cast<double>(usable))
        .add(" free");
  };
  if (!p.any_blocked && fit >= min_need) {
    uint32_t r = static_cast<uint32_t>(fit / gpr);
    reason_text why("elastic start at ");
    why.num("replicas", r).add(" of ").num("full_replicas", full_replicas(j.req)).add(" replicas beside the critical reserve (");
    room(why).add(")");
    omni_start_replicas(j, r, p, now_s, std::move(why).done(), out);
  } else if (!p.any_blocked && usable >= min_need) {
    // The reserve is kept for critical bursts; until one comes the job borrows it on
    // best-effort terms (gives it back at once, outside its run window).
    uint32_t r = std::min(full_replicas(j.req), static_cast<uint32_t>(usable / gpr));
    reason_text why("borrows the critical reserve (");
    why.num("replicas", r).add(" of ").num("full_replicas", full_replicas(j.req)).add(" replicas; ");
    room(why).add("; gives it back at once, outside its run window)");
    omni_start_replicas(j, r, p, now_s, std::move(why).done(), out, true);
  } else {
    ++reserve_deferrals_;
    // Without the reserve it would reclaim from work that gives way at once, or fit.
    const bool reserve_holds = p.free_now > 0 || p.at_once > 0;
    set_hold(j, {reserve_holds ? hold_reason::critical_reserve : hold_reason::cluster_full, p.free_now, min_need,
                 critical_peak_now_, {}},
             now_s, out);
  }
}

// A preemptible job that does not fit at full size, with nobody blocked in front of it,
// starts with the replicas the usable GPUs hold when that reaches its minimum.
bool scheduler_core::omni_start_elastic(job_state& j, omni_pass& p, double now_s, std::vector<command>& out) {
  const uint32_t gpr = j.req.gpus_per_replica;
  const int64_t usable = p.usable();
  if (!preemptible(j.req.klass) || p.any_blocked || usable < j.req.min_replicas * gpr) return false;
  uint32_t r = static_cast<uint32_t>(usable / gpr);
  reason_text why("elastic start at ");
  why.num("replicas", r).add(" of ").num("full_replicas", full_replicas(j.req)).add(" replicas (cluster full: ");
  why.num("gpus_free", static_cast<double>(usable)).add(" GPUs free, it needs ").num("gpus_wanted", j.req.gpus);
  why.add(" at full size)");
  omni_start_replicas(j, r, p, now_s, std::move(why).done(), out);
  return true;
}

void scheduler_core::omni_start_replicas(job_state& j, uint32_t replicas, omni_pass& p, double now_s,
                                         explained reason, std::vector<command>& out, bool borrowed) {
  start(j, replicas, now_s, std::move(reason), out, borrowed);
  const uint32_t gpus = replicas * j.req.gpus_per_replica;
  p.free_now -= gpus;
  p.pool -= gpus;
  if (j.req.klass == job_class::regular && !borrowed) p.regular_room -= gpus;
}

// A critical job that does not fit. GPUs that borrowers are already giving back arrive at
// once, like free ones.
void scheduler_core::omni_claim_for_critical(const job_state& j, omni_pass& p, double now_s,
                                             std::vector<command>& out) {
  const uint32_t need = j.req.gpus;
  const int64_t given_back = p.critical_blocked ? 0 : gpus_giving_way(draining_);
  const int64_t instant = int64_t{p.free_now} + given_back;
  if (!p.critical_blocked && instant + p.at_once >= need) {
    // It can start now: evict jobs that give way at once and keep the free part for it.
    // Only the first blocked critical job evicts: one behind it would free GPUs that the
    // first one claims again in the next pass, while borrowers refilled the rest.
    int64_t deficit = need - instant;
    uint32_t got = deficit > 0 ? reclaim(j, static_cast<uint32_t>(deficit), now_s, out, victims::at_once) : 0;
    p.at_once -= got;
    p.pool += got;
    p.free_now -= static_cast<uint32_t>(std::clamp<int64_t>(need - given_back - got, 0, p.free_now));
  } else {
    // It waits for drains or other jobs: borrowers keep running on what it is owed until
    // then; regular jobs start draining now, since their drain takes minutes.
    int64_t from_borrowers = std::clamp<int64_t>(need - std::max<int64_t>(p.pool, 0), 0, p.at_once);
    p.at_once -= from_borrowers;
    int64_t deficit = need - std::max<int64_t>(p.pool, 0) - from_borrowers;
    if (deficit > 0) p.pool += reclaim(j, static_cast<uint32_t>(deficit), now_s, out, victims::draining);
    p.pool += from_borrowers;
  }
}

// Shrunk or elastically started jobs grow back, oldest in queue order first, while GPUs
// are free and nobody waits (regular ones only within the room beside the reserve).
void scheduler_core::grow(double now_s, std::vector<command>& out) {
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
    const uint32_t by_free = place_.free_count() / j.req.gpus_per_replica;
    uint32_t add = std::min({full_replicas(j.req) - j.replicas, by_free, room / j.req.gpus_per_replica});
    if (regular && add < std::min(full_replicas(j.req) - j.replicas, by_free)) {
      // Free GPUs it could grow into are kept in the critical reserve.
      hold_note h{hold_reason::critical_reserve, place_.free_count() - add * j.req.gpus_per_replica,
                  j.req.gpus_per_replica, critical_peak_now_, {}};
      if (grow_hold_.reason == hold_reason::none) {
        grow_hold_ = h;
        grow_hold_job_ = j.req.id;
      }
      set_hold(j, std::move(h), now_s, out);
    } else if (j.hold_logged != hold_reason::none) {
      j.hold_logged = hold_reason::none;
    }
    if (add == 0) continue;
    auto choice = place_.choose_near(add * j.req.gpus_per_replica, j.gpus);
    if (!choice) continue;
    const uint32_t free_before = place_.free_count(), from = j.replicas;
    place_.take(j.req.id, choice->gpus);
    j.gpus.insert(j.gpus.end(), choice->gpus.begin(), choice->gpus.end());
    j.replicas += add;
    if (regular) regular_room -= int64_t{add} * j.req.gpus_per_replica;
    command c = make_command(command_kind::resize, j.req.id, j.epoch);
    c.gpus = j.gpus;
    c.replicas = j.replicas;
    reason_text why("grow: free GPUs and nobody waiting (");
    why.num("from_replicas", from).add(" to ").num("replicas", j.replicas).add(" of ");
    why.num("full_replicas", full_replicas(j.req)).add(" replicas; ").num("gpus_free", free_before).add(" GPUs were free)");
    set_reason(c, std::move(why).done());
    emit(now_s, std::move(c), out);
  }
}

}  // namespace msomni::sched
