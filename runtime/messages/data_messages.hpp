// Data-pipeline flow control: credits upstream, downgrades, resumable cursors.
// Plain structs, no CAF: pure cores include this header; what CAF needs to carry them
// (their inspect overloads) is in data_messages_inspect.hpp, which the catalog includes.
#pragma once

#include "core/modality.hpp"

#include <cstdint>
#include <string>

namespace msomni::msg {

// downstream stage -> upstream stage: you may send `credits` more items of `source` (whose
// modality is `kind`). Credits add up; `epoch` is the pipeline generation (bumped on every
// restore), so grants from before a restore are recognised and dropped.
struct credit_grant {
  uint64_t epoch = 0;
  modality kind = modality::image;
  uint32_t credits = 0;
  uint32_t source = 0;
  bool operator==(const credit_grant&) const = default;
};

// tensor stage -> decoder pool: how far behind the tensor stage is. `downgrade_share` is the
// share of videos the pool decodes keyframe-only: the least that lets decoding and packing
// keep up with the consumer's step, by the tensor core's estimates at full quality (the stage
// is saturated while it is above 0). Idempotent: the latest notice of the current epoch wins.
struct stage_pressure {
  uint64_t epoch = 0;
  uint32_t backlog = 0;      // decoded samples waiting to be packed
  uint32_t capacity = 0;     // slots the tensor stage grants in total
  uint32_t ready_batches = 0;
  double downgrade_share = 0;  // 0..1
  bool operator==(const stage_pressure&) const = default;
};

// reader -> checkpoint: where a source stands, enough to resume exactly.
struct source_cursor {
  std::string source;
  uint64_t epoch = 0;
  uint64_t shard = 0;
  uint64_t offset = 0;
  uint64_t samples_read = 0;
  bool operator==(const source_cursor&) const = default;
};

}  // namespace msomni::msg
