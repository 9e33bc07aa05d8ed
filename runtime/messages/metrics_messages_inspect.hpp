// The inspect overloads of metrics_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp).
#pragma once

#include "messages/metrics_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_series& x) {
  return f(caf::meta::type_name("metric_series"), x.label_names, x.label_values, x.value, x.value_kind, x.count,
           x.sum, x.bounds, x.cumulative);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_family_series& x) {
  return f(caf::meta::type_name("metric_family_series"), x.name, x.kind, x.series);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metrics_report& x) {
  return f(caf::meta::type_name("metrics_report"), x.source, x.rank, x.node, x.seq, x.families);
}

}  // namespace msomni::msg
