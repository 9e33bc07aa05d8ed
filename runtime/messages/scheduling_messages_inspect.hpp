// The inspect overloads of scheduling_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp); every translation unit that sends one of
// these messages sees it through the catalog (CAF refuses to compile a send without it).
#pragma once

#include "messages/scheduling_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, preempt_notice& x) {
  return f(caf::meta::type_name("preempt_notice"), x.job, x.epoch, x.drain_s, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_released& x) {
  return f(caf::meta::type_name("job_released"), x.job, x.epoch, x.checkpoint_step);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_sample& x) {
  return f(caf::meta::type_name("memory_sample"), x.rank, x.step, x.at_ns, x.used_bytes,
           x.reserved_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_advice& x) {
  return f(caf::meta::type_name("memory_advice"), x.kind, x.gb, x.rank, x.task, x.reason);
}

}  // namespace msomni::msg
