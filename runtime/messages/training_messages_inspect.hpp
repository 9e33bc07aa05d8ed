// The inspect overloads of training_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp); every translation unit that sends one of
// these messages sees it through the catalog (CAF refuses to compile a send without it).
#pragma once

#include "messages/training_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bad_sample_count& x) {
  return f(caf::meta::type_name("bad_sample_count"), x.reason, x.count);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_record& x) {
  return f(caf::meta::type_name("step_record"), x.step, x.world_size, x.loss, x.step_time_ns,
           x.tokens_per_s, x.data_wait_ns, x.downgraded_samples, x.checkpoint_ns, x.bad_samples,
           x.grad_norm, x.optimizer_skipped, x.loss_kind, x.grad_norm_kind, x.epoch, x.mismatched_names, x.compute_ms_max, x.compute_ms_mean);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bad_sample_seen& x) {
  return f(caf::meta::type_name("bad_sample_seen"), x.key, x.reason, x.cause, x.draws);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bad_samples_seen& x) {
  return f(caf::meta::type_name("bad_samples_seen"), x.rank, x.step, x.samples);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_done& x) {
  return f(caf::meta::type_name("checkpoint_done"), x.step, x.rank, x.ok, x.bytes, x.checksum,
           x.error);
}

}  // namespace msomni::msg
