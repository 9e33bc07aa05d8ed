// The sample fetcher's state shared by its reads (source_reader.cpp) and its read-ahead
// hints (sample_read_ahead.cpp): the listings of shards opened before and what each source
// has hinted ahead (internal to msomni_data).
#pragma once

#include "source_reader.hpp"

#include <deque>
#include <map>
#include <optional>
#include <utility>

namespace msomni::data {

// Listings of shards opened before, so a shard opened again in a later epoch costs no header
// walk (a pread per member header). Bounded by samples held; a hit is used only while the
// file still has the size it had when listed, else the shard is listed again.
struct sample_fetcher::listing_cache {
  static constexpr size_t max_samples = 65536;
  struct entry {
    uint64_t file_size = 0;
    std::shared_ptr<const shard_listing> samples;
  };
  std::map<std::pair<uint32_t, size_t>, entry> by_shard;  // (source, shard index)
  size_t held = 0;
};

struct sample_fetcher::read_ahead_state {
  struct source_state {
    std::optional<read_ahead_window> window;  // the storage's, asked once
    // (draw, record bytes) hinted and not read yet: the first entries of the reader's
    // upcoming draws, in the same order.
    std::deque<std::pair<uint64_t, uint64_t>> held;
    read_ahead_window held_sum;
    epoch_layout layout;  // of the epoch hinted last

    // `draw` is being read: when it is the first held, it is held no more.
    void read(uint64_t draw) {
      if (held.empty() || held.front().first != draw) return;
      --held_sum.samples;
      held_sum.bytes -= held.front().second;
      held.pop_front();
    }
  };
  std::vector<source_state> sources;
};

}  // namespace msomni::data
