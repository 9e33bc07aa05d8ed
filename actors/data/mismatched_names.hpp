// Samples whose media bytes are another accepted format than their names say (a PNG named
// .jpeg, media_format.hpp): decoded by their bytes, so they are good samples, but the shard's
// names are wrong and the user should hear of it. A driver notes every decoded sample here:
// each mismatch is counted, and the first of each source is logged as a warning with its key
// (later ones of that source are only counted, so a wrongly named dataset cannot flood the log).
#pragma once

#include "sample.hpp"

#include <cstdint>
#include <set>

namespace msomni::data {

class mismatched_names {
 public:
  // True when `s` is a mismatch (then counted, and logged if its source had none before).
  bool note(const decoded_sample& s);
  uint64_t count() const noexcept { return count_; }

 private:
  std::set<uint32_t> warned_;  // sources already logged: at most the pipeline's sources
  uint64_t count_ = 0;
};

}  // namespace msomni::data
