// The batch source a rank trains from: generated batches for synthetic:// sources, otherwise
// the data pipeline io.pipeline names ("actors": the stage actors on the rank's actor
// system; "inline": decoded in the training thread). And how many scheduler threads the
// rank's actor system needs for it.
#pragma once

#include "batch_source.hpp"

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <string>

namespace caf {
class actor_system;
}

namespace msomni::config {
struct job_config;
}

namespace msomni::rank_worker {

// `batch_memory` (kernels' make_batch_memory for the rank's device) is where the sources pack
// the model's batches (pinned host memory on a CUDA rank); null: ordinary memory. `watch`: the
// rank's metrics, which the pipelines' stages feed (metrics off by default).
std::unique_ptr<batch_source> make_batch_source(caf::actor_system& sys, const config::job_config& cfg,
                                                const data_slot& slot,
                                                std::shared_ptr<std::pmr::memory_resource> batch_memory = nullptr,
                                                data_watch watch = {});

// One line for the rank's log: which of the three make_batch_source builds, with its workers.
std::string describe_batch_source(const config::job_config& cfg);

// Scheduler threads of a rank process: one for its own actors (gateway, control watch), and
// with the actor pipeline one per decode worker (a decode holds its thread) plus one for the
// reader, pool and tensor stage, so packing never waits behind decodes.
size_t rank_actor_threads(const config::job_config& cfg);

}  // namespace msomni::rank_worker
