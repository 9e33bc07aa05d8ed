// A process's UCX node and gateway counters as metric series (msomni_transport_*,
// msomni_gateway_*), copied in before each collection: the transport keeps its own atomics,
// so its hot path pays nothing for metrics.
#pragma once

#include "metrics/metrics_registry.hpp"

namespace msomni::transport {

class transport_hub;
class gateway;

// Until the handle is destroyed (before `hub` and `gw`), each collection of `registry` carries
// their counters.
[[nodiscard]] metrics::metrics_registry::refresher_handle watch_transport(metrics::metrics_registry& registry,
                                                                          transport_hub& hub, const gateway& gw);

}  // namespace msomni::transport
