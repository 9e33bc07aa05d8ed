// What a rank's metrics read of its data stages while they run: each stage's fill, bound and
// credits, and counts of decoded, downgraded and bad samples. The stages' drivers write it
// (the training thread for the inline pipeline, the stage actors for the actor pipeline) and
// the rank's metrics refresher reads it on another thread at collection time, so every field
// is a relaxed atomic: each value is read whole and none orders another. Counts are totals of
// the process: every pipeline a rank builds (after a rollback, at a reslot) adds to the same
// object. Null where a pipeline holds it = metrics off = nothing written.
//
// The three stages, each by the items it produced that the next one has not taken yet:
//   reader:  raw samples read ahead, waiting for a decode (bound: the sum of the per-source
//            prefetch depths); credits: reads the decode pool still allows it
//   decoder: decoded samples waiting to be packed (bound: the same sum); credits: decodes
//            the tensor stage still allows the pool
//   tensor:  packed batches waiting for the training thread (bound: the batch queue); credits:
//            the queue's free places
#pragma once

#include "core/modality.hpp"
#include "sample.hpp"

#include <array>
#include <atomic>
#include <cstdint>

namespace msomni::data {

struct live_stage {
  std::atomic<uint32_t> fill{0}, capacity{0}, credits{0};
  void set(uint32_t fill_now, uint32_t bound, uint32_t credits_now) {
    fill.store(fill_now, std::memory_order_relaxed);
    capacity.store(bound, std::memory_order_relaxed);
    credits.store(credits_now, std::memory_order_relaxed);
  }
};

struct live_data_metrics {
  live_stage reader, decoder, tensor;
  std::array<std::atomic<uint64_t>, modality_count> decoded{};    // samples decoded (text: tokenized)
  std::array<std::atomic<uint64_t>, modality_count> decode_ns{};  // time spent on them
  std::atomic<uint64_t> downgrades{0};                            // videos decoded keyframe-only
  std::array<std::atomic<uint64_t>, bad_reason_count> bad{};      // samples skipped as bad
  std::atomic<uint64_t> mismatched_name{0};  // good samples whose bytes are another format than the name says

  void count_decoded(modality m, double decode_ms) {
    decoded[size_t(m)].fetch_add(1, std::memory_order_relaxed);
    decode_ns[size_t(m)].fetch_add(uint64_t(decode_ms * 1e6), std::memory_order_relaxed);
  }
  void count_mismatched_name() { mismatched_name.fetch_add(1, std::memory_order_relaxed); }
  void count_downgrades(uint64_t n) {
    if (n > 0) downgrades.fetch_add(n, std::memory_order_relaxed);
  }
  // What a driver's own bad-data counts grew by between two looks at them.
  using bad_counts = std::array<uint64_t, bad_reason_count>;  // bad_data_counts::count
  void count_bad(const bad_counts& before, const bad_counts& after) {
    for (size_t r = 0; r < bad.size(); ++r)
      if (after[r] > before[r]) bad[r].fetch_add(after[r] - before[r], std::memory_order_relaxed);
  }
};

}  // namespace msomni::data
