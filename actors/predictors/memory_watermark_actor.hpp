// The memory watermark predictor of a job: one actor in the control process. The orchestrator
// forwards every accepted step sample (msg::memory_sample, in_step false) of every rank; the
// actor keeps a forecast core per rank (watermark_core) and sends msg::memory_advice back to
// the sample's sender when a forecast is news (watermark_core.hpp says when). Learning happens here,
// on the actor's own CAF worker, so neither the ranks nor the orchestrator wait for it.
// Accounted as actor="memory_predictor" (mailbox depth, handling time) when metrics are on;
// its forecasts are msomni_memory_forecast_bytes{rank} and its advice
// msomni_memory_advice_total{action}.
#pragma once

#include "watermark_core.hpp"

#include "messages/actor_interfaces.hpp"
#include "metrics/metrics_registry.hpp"

#include <caf/fwd.hpp>

#include <memory>

namespace msomni::predict {

msg::memory_predictor_actor spawn_memory_watermark(caf::actor_system& sys, watermark_settings settings,
                                  std::shared_ptr<metrics::metrics_registry> registry);

}  // namespace msomni::predict
