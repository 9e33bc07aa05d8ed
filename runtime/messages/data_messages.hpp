// Data-pipeline flow control: credits upstream, downgrades, resumable cursors.
#pragma once

#include "core/modality.hpp"

#include <caf/meta/type_name.hpp>

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
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, credit_grant& x) {
  return f(caf::meta::type_name("credit_grant"), x.epoch, x.kind, x.credits, x.source);
}

// tensor stage -> decoder pool: how far behind the tensor stage is. `saturated` is the
// tensor core's hysteresis decision; while it holds, video is decoded keyframe-only.
// Idempotent: the latest notice of the current epoch wins.
struct stage_pressure {
  uint64_t epoch = 0;
  uint32_t backlog = 0;      // decoded samples waiting to be packed
  uint32_t capacity = 0;     // slots the tensor stage grants in total
  uint32_t ready_batches = 0;
  bool saturated = false;
  bool operator==(const stage_pressure&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_pressure& x) {
  return f(caf::meta::type_name("stage_pressure"), x.epoch, x.backlog, x.capacity, x.ready_batches,
           x.saturated);
}

// reader -> checkpoint: where a source stands, enough to resume exactly.
struct source_cursor {
  std::string source;
  uint64_t epoch = 0;
  uint64_t shard = 0;
  uint64_t offset = 0;
  uint64_t samples_read = 0;
  bool operator==(const source_cursor&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, source_cursor& x) {
  return f(caf::meta::type_name("source_cursor"), x.source, x.epoch, x.shard, x.offset,
           x.samples_read);
}

}  // namespace msomni::msg
