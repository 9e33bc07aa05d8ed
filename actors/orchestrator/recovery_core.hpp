// What the job does after ranks die: continue on the survivors (world minus the dead,
// never below elasticity.min_replicas) from the last checkpoint, or give up with a reason.
// Pure: the launcher supplies the counts and carries out the decision. Bounded: at most
// `max_recoveries` recoveries per run, so a crash loop ends.
#pragma once

#include "config/job_config.hpp"

#include <cstdint>
#include <string>

namespace msomni::orchestrator {

struct recovery_decision {
  bool continue_job = false;
  int64_t world = 0;       // replicas of the next generation
  std::string reason;
};

recovery_decision decide_recovery(int64_t world, int64_t dead_ranks, int64_t recoveries_so_far,
                                  const config::elasticity_section& e, int64_t max_recoveries = 3);

}  // namespace msomni::orchestrator
