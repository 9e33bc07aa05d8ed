// decide_recovery (see recovery_core.hpp).
#include "recovery_core.hpp"

namespace msomni::orchestrator {

recovery_decision decide_recovery(int64_t world, int64_t dead_ranks, int64_t recoveries_so_far,
                                  const config::elasticity_section& e, int64_t max_recoveries) {
  recovery_decision d;
  const int64_t survivors = world - dead_ranks;
  if (recoveries_so_far >= max_recoveries) {
    d.reason = "gave up after " + std::to_string(recoveries_so_far) + " recoveries (bound " +
               std::to_string(max_recoveries) + ")";
    return d;
  }
  if (survivors < e.min_replicas) {
    d.reason = std::to_string(survivors) + " surviving replicas are below elasticity.min_replicas " +
               std::to_string(e.min_replicas);
    return d;
  }
  d.continue_job = true;
  d.world = survivors;
  d.reason = std::to_string(dead_ranks) + " of " + std::to_string(world) + " ranks lost; continuing on " +
             std::to_string(survivors) + " from the last checkpoint";
  return d;
}

}  // namespace msomni::orchestrator
