// The inspect overloads of scheduling_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp); every translation unit that sends one of
// these messages sees it through the catalog (CAF refuses to compile a send without it).
#pragma once

#include "messages/scheduling_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_memory_report& x) {
  return f(caf::meta::type_name("job_memory_report"), x.job, x.forecast_peak_bytes, x.device_bytes, x.step);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, preempt_notice& x) {
  return f(caf::meta::type_name("preempt_notice"), x.job, x.epoch, x.drain_s, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_released& x) {
  return f(caf::meta::type_name("job_released"), x.job, x.epoch, x.checkpoint_step);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_features& x) {
  return f(caf::meta::type_name("batch_features"), x.image_samples, x.video_samples, x.text_samples, x.image_patches,
           x.video_patches, x.text_tokens, x.seq_len, x.micro_batch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_sample& x) {
  return f(caf::meta::type_name("memory_sample"), x.name, x.epoch, x.rank, x.world_size, x.step, x.at_ns, x.in_step,
           x.in_use_bytes, x.peak_bytes, x.host_batch_bytes, x.budget_bytes, x.batch, x.upcoming);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_advice& x) {
  return f(caf::meta::type_name("memory_advice"), x.kind, x.gb, x.rank, x.task, x.reason, x.rank_name, x.step,
           x.forecast_gb, x.fits);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_fit& x) {
  return f(caf::meta::type_name("memory_fit"), x.rank_name, x.rank, x.world_size, x.step, x.forecast_bytes,
           x.budget_bytes, x.batch, x.replay);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_fit_done& x) {
  return f(caf::meta::type_name("memory_fit_done"), x.fit, x.epoch, x.micro_batches_split, x.parts, x.keyframe_cuts,
           x.fits, x.peak_bytes, x.detail);
}

}  // namespace msomni::msg
