// The inspect overloads of cluster_job_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp); every translation unit that sends one of
// these messages sees it through the catalog (CAF refuses to compile a send without it).
#pragma once

#include "messages/cluster_job_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_submit& x) {
  return f(caf::meta::type_name("job_submit"), x.job, x.job_class, x.gpus, x.gpus_per_replica,
           x.min_replicas, x.submitted_ago_s, x.memory_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_rejoin& x) {
  return f(caf::meta::type_name("job_rejoin"), x.request, x.held, x.replicas, x.epoch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_step_report& x) {
  return f(caf::meta::type_name("job_step_report"), x.job, x.step_s, x.data_wait_s,
           x.checkpoint_s, x.bubble_share);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_finished& x) {
  return f(caf::meta::type_name("job_finished"), x.job, x.exit_code, x.stopped, x.checkpoint_step);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_command& x) {
  return f(caf::meta::type_name("job_command"), x.kind, x.job, x.epoch, x.gpus, x.replicas,
           x.keep_replicas, x.drain_s, x.host, x.share, x.resume_step, x.at_s, x.reason, x.figures);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_status_request& x) {
  return f(caf::meta::type_name("scheduler_status_request"), x.who);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_job_row& x) {
  return f(caf::meta::type_name("scheduler_job_row"), x.job, x.job_class, x.phase, x.gpus, x.replicas, x.borrowed,
           x.host, x.since_s, x.hold, x.hold_detail, x.share, x.exit_code, x.checkpoint_step, x.why,
           x.figures);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_status& x) {
  return f(caf::meta::type_name("scheduler_status"), x.policy, x.gpus_total, x.gpus_free, x.pending_critical,
           x.pending_regular, x.pending_best_effort, x.queue_capacity, x.running, x.borrowed, x.draining, x.guests,
           x.decisions, x.reserve_deferrals, x.rejected, x.budget_holds, x.recovering, x.held_back, x.jobs,
           x.jobs_listed_of, x.now_s, x.metrics_address, x.held, x.held_job, x.held_detail, x.best_effort_drain_s,
           x.ended, x.ended_capacity, x.held_figures, x.recent);
}

}  // namespace msomni::msg
