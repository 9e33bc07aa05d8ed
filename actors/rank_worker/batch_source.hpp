// Where a rank worker's micro-batches come from: the data pipeline for real datasets, or
// the synthetic generator for synthetic:// sources.
//
// The global sample order does not depend on the replica count. With G = world x
// micro_batch x grad_accum samples per optimizer step (the global batch, fixed across
// resizes), micro-step k of optimizer step s on rank r takes the global samples
//   s*G + (k*world + r)*micro_batch + [0, micro_batch).
// So a job that changes its replica count at a step boundary (reslot) sees the same
// samples in each optimizer step as a static job. The saved position, taken at a step
// boundary, is the same on every rank and restores under any slot.
#pragma once

#include "messages/scheduling_messages.hpp"
#include "messages/training_messages.hpp"
#include "model/micro_batch.hpp"

#include <cstdint>
#include <memory>
#include <memory_resource>
#include <span>
#include <vector>

namespace msomni::metrics {
class metrics_registry;
}
namespace msomni::data {
struct live_data_metrics;
}

namespace msomni::rank_worker {

// The rank's metrics as its data sources see them (data::pipeline_setup's registry and live):
// both null when metrics are off. Generated batches have no stages to watch.
struct data_watch {
  std::shared_ptr<metrics::metrics_registry> registry;
  std::shared_ptr<data::live_data_metrics> live;
};

// The distinct bad samples a source met so far, each with its cumulative draws (at most the
// data pipeline's listing bound), and how many good samples it decoded by bytes that are
// another format than their names say.
struct bad_sample_listing {
  std::vector<msg::bad_sample_count> totals;  // as bad_sample_totals(), of the same moment
  std::vector<msg::bad_sample_seen> samples;
  uint64_t mismatched = 0;
};

// The memory a source packs the model's batches into: the rank's batch memory when it has
// one (kernels' make_batch_memory), else ordinary memory.
inline std::pmr::memory_resource* batch_memory_or_default(const std::shared_ptr<std::pmr::memory_resource>& m) {
  return m ? m.get() : std::pmr::get_default_resource();
}

struct data_slot {
  uint32_t rank = 0;
  uint32_t world = 1;
  int64_t grad_accum = 1;
  int64_t micro_batch = 1;
  int64_t global_batch() const { return static_cast<int64_t>(world) * micro_batch * grad_accum; }
};

class batch_source {
 public:
  virtual ~batch_source() = default;
  virtual model::micro_batch next() = 0;
  // Only at an optimizer-step boundary; keeps the global position.
  virtual void reslot(const data_slot& slot) = 0;
  virtual std::vector<uint8_t> save_state() const = 0;
  virtual void restore_state(std::span<const uint8_t> bytes) = 0;
  // Video samples decoded keyframe-only under pressure so far (0 for generated data).
  virtual uint64_t downgraded_total() const { return 0; }
  // Bad samples met so far, one entry per reason the source can meet, in the same order on
  // every rank of a job (the trainer sums them over ranks per step); none for generated data.
  virtual std::vector<msg::bad_sample_count> bad_sample_totals() const { return {}; }
  // Which samples those were (cumulative draws), and the mismatched names; none for generated data.
  virtual bad_sample_listing bad_samples_listed() const { return {}; }
  // The micro-batches already packed that next() returns next, at most `max`, oldest first
  // (memory_features.hpp): what a memory forecast may know of the coming steps. Only the data
  // stage actors read ahead into packed batches; the other sources know none.
  virtual std::vector<msg::batch_features> upcoming_features(size_t max) const {
    (void)max;
    return {};
  }
};

}  // namespace msomni::rank_worker
