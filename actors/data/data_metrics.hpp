// Per-stage counters and gauges of the data pipeline: a plain struct that drivers update and
// the inspector/metrics endpoint reads. Rates are computed by the driver from its clock.
#pragma once

#include "core/modality.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace msomni::data {

struct stage_gauges {
  uint64_t items = 0;          // items this stage emitted
  double items_per_s = 0;      // since the pipeline (re)started
  uint32_t queue_fill = 0;     // items held now
  uint32_t queue_capacity = 0; // the bound on queue_fill
  uint32_t credits = 0;        // credits held now from the next stage
};

struct data_metrics {
  stage_gauges reader, decoder, tensor;
  std::array<uint64_t, modality_count> decoded{};       // samples decoded per modality
  std::array<double, modality_count> decode_ms{};       // decode time per modality, summed
  uint64_t downgrades = 0;                              // videos decoded keyframe-only
  uint64_t videos = 0;                                  // videos dispatched (downgrade ratio)
  uint64_t mismatched_name = 0;                         // good samples decoded by bytes another format than their name
  uint64_t batches = 0;
  double data_wait_ms_total = 0;                        // rank time spent waiting in next_batch
  double data_wait_ms_max = 0;
  std::string report() const;                           // one human-readable line
};

}  // namespace msomni::data
