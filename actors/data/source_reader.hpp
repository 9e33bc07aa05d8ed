// The raw stage: each source's own sample order, random access to any draw of it, and the
// reader that reads exactly this rank's draws.
//
// A source's order in epoch e: its shards (sorted by name) shuffled per (seed, source, e),
// the samples of each shard shuffled per (seed, source, e, shard), concatenated. Draw d of a
// source (d counts across epochs) is position d mod N of epoch d / N, N = samples per epoch,
// found by walking every shard's tar headers once at start (source_index). The global order
// (global_order.hpp) says which draws are this rank's; own_reader reads those and never
// touches the bytes of the others (a shard is opened only for a draw in it: headers, then
// one pread per sample, spanning its adjacent members).
//
// Shard-level damage (bad tar headers, truncation, an unreadable shard) rides on the draw at
// the shard's start position in each epoch (for an empty shard that is the next shard's first
// sample, or the next epoch's first), so the rank owning that draw counts it, once per epoch,
// whatever the world size. Sample-level damage is found on the sample itself (check_raw_sample
// here, the decoder later) and replaced by sample_repair.hpp's rule.
#pragma once

#include "core/modality.hpp"
#include "global_order.hpp"
#include "sample.hpp"
#include "storage.hpp"
#include "tar_sample_assembler.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msomni::data {

struct source_spec {
  std::string name;
  std::string uri;
  modality kind = modality::image;
  double weight = 1.0;
  // io.max_sample_bytes: a member it needs that is larger makes the sample too_large, unread.
  uint64_t max_sample_bytes = uint64_t{256} << 20;
};

struct shard_info {
  std::string path;
  std::string label;                   // file name, the prefix of sample keys
  uint64_t samples = 0;                // keys found by the header walk
  std::vector<bad_reason> problems;    // bad_tar_header per damaged run, truncated, unreadable
};

// One epoch of a source: the shard order and where each shard starts.
struct epoch_layout {
  uint64_t epoch = UINT64_MAX;
  std::vector<size_t> order;     // indices into shards()
  std::vector<uint64_t> start;   // start[p] = first position of order[p]; start.back() = N
  std::map<uint64_t, std::vector<shard_problem>> problems;  // position -> damage riding on it

  // The index into order of the shard holding position `pos`: the last start <= pos among
  // shards that hold samples.
  size_t slot_of(uint64_t pos) const {
    return size_t(std::upper_bound(start.begin(), start.end() - 1, pos) - start.begin()) - 1;
  }
};

// Immutable after construction, so every reader and decode worker shares one.
class source_index {
 public:
  // Lists every shard (tar headers only). Throws std::runtime_error when the source has no
  // shards or no sample at all (a configuration error, not bad data).
  source_index(uint32_t index, source_spec spec, uint64_t seed, bool shuffle, const storage& st);

  uint32_t index() const noexcept { return index_; }
  const source_spec& spec() const noexcept { return spec_; }
  const std::vector<shard_info>& shards() const noexcept { return shards_; }
  uint64_t samples_per_epoch() const noexcept { return samples_; }

  epoch_layout layout(uint64_t epoch) const;
  // The listing walked at construction, kept while the source has at most
  // listing_samples_max samples (null otherwise, or for an unreadable shard), with the
  // file size it had then: a fetcher opening the shard uses it instead of walking its
  // headers a second time (one pread per member header).
  static constexpr uint64_t listing_samples_max = 65536;
  std::shared_ptr<const shard_listing> listing(size_t shard, uint64_t file_size) const;
  // The same listing as walked at construction, whatever the file is now (null when not kept).
  std::shared_ptr<const shard_listing> listed(size_t shard) const {
    return shard < listings_.size() ? listings_[shard] : nullptr;
  }
  // Sample order inside one shard of `samples` keys in `epoch` (indices in tar order).
  std::vector<size_t> sample_order(uint64_t epoch, size_t shard, size_t samples) const;
  // The readable cursor after `draws` draws (epoch, shard position, offset, samples_read).
  msg::source_cursor cursor_at(uint64_t draws) const;

 private:
  std::vector<size_t> shard_order(uint64_t epoch) const;

  uint32_t index_;
  source_spec spec_;
  uint64_t seed_;
  bool shuffle_;
  std::vector<shard_info> shards_;
  std::vector<std::shared_ptr<const shard_listing>> listings_;  // per shard, see listing()
  std::vector<uint64_t> listed_sizes_;
  uint64_t samples_ = 0;
};

using source_list = std::vector<source_index>;

// Reads any draw of any source; keeps the last shard opened per source (listing and sample
// order), so draws that follow each other in a shard cost one pread each, and the listings
// of shards opened before (up to 65536 samples' worth), so reopening one in a later epoch
// walks no headers while its file size is unchanged. Not shared
// between threads: one per reader, decode worker or pool.
class sample_fetcher {
 public:
  sample_fetcher(std::shared_ptr<const source_list> sources, std::shared_ptr<const storage> st);
  sample_fetcher(sample_fetcher&&) noexcept;
  ~sample_fetcher();

  // The sample at `draw` of `source` (marked bad when its members are). `primary`: it is read
  // for its own slot, so the shard damage riding on its position comes along.
  raw_sample read(uint32_t source, uint64_t draw, bool primary);
  const source_list& sources() const noexcept { return *sources_; }
  // How far the reader of `source` hints ahead (remote sources; samples 0 for local ones).
  read_ahead_window read_ahead(uint32_t source);
  // Remote sources (sample_read_ahead.cpp): once the draws hinted and not read yet have fallen
  // to half the window, hints the storage with the next chunk of `upcoming` (this source's
  // next own draws, in the order they are read, any shard, any epoch), each shard's draws
  // grouped into runs that one GET serves (read_ahead_window.hpp, read_runs.hpp).
  void hint_ahead(uint32_t source, const std::deque<uint64_t>& upcoming);

 private:
  struct open_shard;
  struct listing_cache;
  // Opens `shard` of `source` for `epoch`: its listing from the cache, the index or a header
  // walk, and its sample order.
  void open_shard_of(uint32_t source, size_t shard, uint64_t epoch);
  std::shared_ptr<const source_list> sources_;
  std::shared_ptr<const storage> storage_;
  std::vector<std::unique_ptr<open_shard>> open_;  // per source
  // The samples of `shard` of `source`: the index's listing, one listed before, or the
  // storage's (null when it cannot be opened); kept in listings_ while there is room.
  std::shared_ptr<const shard_listing> listing_of(uint32_t source, size_t shard);
  // Walks the headers of `file` (shard `shard` of `source`) and keeps the listing in
  // listings_ in place of any kept before, while there is room.
  std::shared_ptr<const shard_listing> list_and_keep(uint32_t source, size_t shard, const byte_source& file);
  struct read_ahead_state;
  std::unique_ptr<listing_cache> listings_;        // shards listed before, by (source, shard)
  std::unique_ptr<read_ahead_state> ahead_;        // per source: what was hinted ahead
};

// This rank's draws, source by source, in the global order's consumption order. The reader
// stage asks ready(s) before next(s); ready plans ahead in the global order until source s has
// a planned draw or `max_planned` draws of other sources wait (a bound on memory only: the
// tensor stage consumes in plan order, so what it waits for is always planned in time).
class own_reader {
 public:
  static constexpr size_t max_planned = 1 << 14;
  own_reader(order_core plan, sample_fetcher fetcher);

  bool ready(uint32_t source);
  raw_sample next(uint32_t source);  // throws std::logic_error when not ready
  size_t planned() const noexcept { return planned_total_; }

 private:
  order_core plan_;
  sample_fetcher fetcher_;
  std::vector<std::deque<uint64_t>> planned_;  // per source: own draws not read yet
  std::vector<uint64_t> seq_;
  size_t planned_total_ = 0;
};

}  // namespace msomni::data
