// Scheduler policy core, restart half: a job that ran under a previous instance of the
// scheduler (msomni-sched restarted) rejoins with the GPUs it still holds. It keeps them
// when they are a valid size for it and free here; otherwise it waits in the queue again.
// No GPU is given twice: placement's take() is the guard either way.
#include "scheduler_core.hpp"

#include <algorithm>

namespace msomni::sched {

std::string scheduler_core::unadoptable(const job_state& j, const std::vector<uint32_t>& gpus,
                                        uint32_t replicas) const {
  if (replicas < j.req.min_replicas || replicas > full_replicas(j.req))
    return "it reports " + std::to_string(replicas) + " replicas, outside its " + std::to_string(j.req.min_replicas) +
           ".." + std::to_string(full_replicas(j.req));
  if (gpus.size() != size_t{replicas} * j.req.gpus_per_replica)
    return "it reports " + std::to_string(gpus.size()) + " GPUs for " + std::to_string(replicas) + " replicas";
  std::vector<uint32_t> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return "it reports a GPU twice";
  for (uint32_t g : sorted) {
    if (g >= place_.total()) return "GPU " + std::to_string(g) + " is not in this cluster";
    if (!place_.owner(g).empty()) return "GPU " + std::to_string(g) + " is " + place_.owner(g) + "'s here";
  }
  return {};
}

std::vector<command> scheduler_core::adopt(const job_request& req, const std::vector<uint32_t>& gpus,
                                           uint32_t replicas, uint64_t epoch, double now_s) {
  std::vector<command> out;
  command c = make_command(command_kind::reject, req.id, epoch);
  c.reason = refusal(req, false);
  if (!c.reason.empty()) {
    ++rejected_;
    emit(now_s, c, out);
    return out;
  }
  job_state& j = admit(req, now_s);
  j.epoch = epoch;  // the job's own count goes on: commands of a lower epoch are stale to it
  const std::string why = unadoptable(j, gpus, replicas);
  if (!why.empty() && pending_.size() >= params_.queue_capacity) {
    erase_job(jobs_.find(req.id));
    ++rejected_;
    c.reason = "rejoined after a scheduler restart, but " + why + ", and the queue is full (queue_capacity)";
    emit(now_s, c, out);
    return out;
  }
  if (why.empty()) {
    place_.take(j.req.id, gpus);
    set_phase(j, job_phase::running);
    j.gpus = gpus;
    j.replicas = replicas;
    j.run_since_s = now_s;
    c.kind = command_kind::adopted;
    c.gpus = gpus;
    c.replicas = replicas;
    c.reason = "rejoined after a scheduler restart: keeps its GPUs";
  } else {
    pending_.insert(key_of(j));
    c.kind = command_kind::requeue;
    c.reason = "rejoined after a scheduler restart, but " + why + ": stop and wait to be started again";
  }
  emit(now_s, std::move(c), out);
  return out;
}

std::vector<command> scheduler_core::schedule_now(double now_s) {
  std::vector<command> out;
  schedule(now_s, out);
  return out;
}

}  // namespace msomni::sched
