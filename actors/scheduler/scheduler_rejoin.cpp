// Scheduler policy core, restart half: a job that ran under a previous instance of the
// scheduler (msomni-sched restarted) rejoins with the GPUs it still holds. It keeps them
// when they are a valid size for it and free here; otherwise it waits in the queue again.
// No GPU is given twice: placement's take() is the guard either way.
#include "scheduler_core.hpp"

#include <algorithm>

namespace msomni::sched {

explained scheduler_core::unadoptable(const job_state& j, const std::vector<uint32_t>& gpus,
                                      uint32_t replicas) const {
  if (replicas < j.req.min_replicas || replicas > full_replicas(j.req))
    return std::move(reason_text("it reports ")
                         .num("replicas", replicas)
                         .add(" replicas, outside its ")
                         .num("min_replicas", j.req.min_replicas)
                         .add("..")
                         .num("full_replicas", full_replicas(j.req)))
        .done();
  if (gpus.size() != size_t{replicas} * j.req.gpus_per_replica)
    return std::move(reason_text("it reports ")
                         .num("gpus", static_cast<double>(gpus.size()))
                         .add(" GPUs for ")
                         .num("replicas", replicas)
                         .add(" replicas of ")
                         .num("gpus_per_replica", j.req.gpus_per_replica))
        .done();
  std::vector<uint32_t> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    return std::move(reason_text("it reports a GPU twice (GPU ").num("gpu", *twice).add(")")).done();
  for (uint32_t g : sorted) {
    if (g >= place_.total())
      return std::move(reason_text("GPU ").num("gpu", g).add(" is not in this cluster (").num(
                           "gpus_total", place_.total()).add(" GPUs)"))
          .done();
    if (!place_.owner(g).empty())
      return std::move(reason_text("GPU ").num("gpu", g).add(" is " + place_.owner(g) + "'s here")).done();
  }
  return {};
}

std::vector<command> scheduler_core::adopt(const job_request& req, const std::vector<uint32_t>& gpus,
                                           uint32_t replicas, uint64_t epoch, double now_s) {
  std::vector<command> out;
  command c = make_command(command_kind::reject, req.id, epoch);
  set_reason(c, refusal(req, false));
  if (!c.reason.empty()) {
    ++rejected_;
    emit(now_s, c, out);
    return out;
  }
  job_state& j = admit(req, now_s);
  j.epoch = epoch;  // the job's own count goes on: commands of a lower epoch are stale to it
  const explained why = unadoptable(j, gpus, replicas);
  if (!why.text.empty() && pending_.size() >= params_.queue_capacity) {
    erase_job(jobs_.find(req.id));
    ++rejected_;
    set_reason(c, std::move(reason_text("rejoined after a scheduler restart, but ")
                                .add(why)
                                .add(", and the queue is full (queue_capacity ")
                                .num("queue_capacity", static_cast<double>(params_.queue_capacity))
                                .add(")"))
                      .done());
    emit(now_s, c, out);
    return out;
  }
  if (why.text.empty()) {
    place_.take(j.req.id, gpus);
    set_phase(j, job_phase::running);
    j.gpus = gpus;
    j.replicas = replicas;
    j.run_since_s = now_s;
    c.kind = command_kind::adopted;
    c.gpus = gpus;
    c.replicas = replicas;
    set_reason(c, std::move(reason_text("rejoined after a scheduler restart: keeps its GPUs (")
                                .num("gpus", static_cast<double>(gpus.size()))
                                .add(" GPUs, ")
                                .num("replicas", replicas)
                                .add(" replicas, all free here)"))
                      .done());
  } else {
    pending_.insert(key_of(j));
    c.kind = command_kind::requeue;
    set_reason(c, std::move(reason_text("rejoined after a scheduler restart, but ")
                                .add(why)
                                .add(": stop and wait to be started again"))
                      .done());
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
