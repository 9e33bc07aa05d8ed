// The data stage actors' shared vocabulary (CAF, internal to msomni_data_actors): their atoms,
// the shared-pointer messages they pass, and how each stage actor is spawned.
#pragma once

#include "batch_handoff.hpp"
#include "data_pipeline.hpp"
#include "live_data_metrics.hpp"

#include "core/clock.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <memory>

// Samples and batches never leave the rank process, so they travel as shared pointers.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::raw_sample>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<std::vector<msomni::data::raw_sample>>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::decoded_sample>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::micro_batch>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::data_metrics>)

namespace msomni::metrics {
class metrics_registry;
}

namespace msomni::data::stage {

using wire_atom = caf::atom_constant<caf::atom("dwire")>;
using taken_atom = caf::atom_constant<caf::atom("dtaken")>;
using fail_atom = caf::atom_constant<caf::atom("dfail")>;
using decode_atom = caf::atom_constant<caf::atom("ddecode")>;
using done_atom = caf::atom_constant<caf::atom("ddone")>;
using stats_atom = caf::atom_constant<caf::atom("dstats")>;

using batch_ptr = std::shared_ptr<micro_batch>;

inline constexpr auto relaxed = std::memory_order_relaxed;

inline double ms_since(const msomni::clock& c, time_point t) {
  return std::chrono::duration<double, std::milli>(c.now() - t).count();
}

// reader: reads one of this rank's samples per credit, in the reader core's order, and sends
// what one grant allowed as one message to `pool`; a read failure goes to `tensor`.
caf::actor spawn_reader(caf::actor_system& sys, std::shared_ptr<own_reader> reader, size_t sources, caf::actor pool,
                        caf::actor tensor, std::shared_ptr<metrics::metrics_registry> registry,
                        std::shared_ptr<live_data_metrics> live);

// pool: hands raw samples to its decode workers (text decodes inline) within the tensor
// stage's credits and grants the reader credits. `mismatched_total`: the pipeline's count of
// samples decoded by bytes another format than their names, kept across the stage actors a
// reslot or restore replaces.
caf::actor spawn_pool(caf::actor_system& sys, pipeline_setup setup, std::shared_ptr<pixel_pool> pixels,
                      std::shared_ptr<const source_list> sources, std::shared_ptr<const storage> storage,
                      caf::actor tensor, std::shared_ptr<std::atomic<uint64_t>> mismatched_total);

// tensor: places decoded samples in batch slots, packs them and hands complete batches to the
// consumer through `handoff`, starting at `start`.
caf::actor spawn_tensor(caf::actor_system& sys, pipeline_setup setup, order_slot slot, pipeline_position start,
                        std::shared_ptr<pixel_pool> pixels, std::shared_ptr<const msomni::clock> clock,
                        std::shared_ptr<batch_handoff> handoff);

}  // namespace msomni::data::stage
