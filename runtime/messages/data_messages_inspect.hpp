// The inspect overloads of data_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp); every translation unit that sends one of
// these messages sees it through the catalog (CAF refuses to compile a send without it).
#pragma once

#include "messages/data_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, credit_grant& x) {
  return f(caf::meta::type_name("credit_grant"), x.epoch, x.kind, x.credits, x.source);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_pressure& x) {
  return f(caf::meta::type_name("stage_pressure"), x.epoch, x.backlog, x.capacity, x.ready_batches,
           x.downgrade_share);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, source_cursor& x) {
  return f(caf::meta::type_name("source_cursor"), x.source, x.epoch, x.shard, x.offset,
           x.samples_read);
}

}  // namespace msomni::msg
