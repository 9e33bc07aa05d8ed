// A process that does not serve /metrics itself (a rank, a remote node agent) pushes its whole
// registry to the control process every `interval` as a catalog message; the control process
// serves them for the whole job. The pusher is an accounted actor like every shell.
#pragma once

#include "messages/actor_interfaces.hpp"
#include "metrics/metrics_registry.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace msomni::metrics {

struct push_identity {
  std::string source;  // the rank's name, or the agent's node
  std::string rank;    // empty for an agent
  std::string node;
};

// How often a process pushes its samples while metrics are on.
inline constexpr std::chrono::milliseconds push_interval{1000};

// Pushes `registry` to `target` (the control process's orchestrator) now and every `interval`
// until the actor is stopped (or its target goes down).
caf::actor spawn_metrics_pusher(caf::actor_system& sys, std::shared_ptr<metrics_registry> registry,
                                msg::orchestrator_actor target,
                                push_identity who, std::chrono::milliseconds interval = push_interval);

}  // namespace msomni::metrics
