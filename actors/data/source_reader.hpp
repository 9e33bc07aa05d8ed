// The raw stage for one source: which shards this rank reads, in which order, and where it
// stands. Shards are shuffled per (seed, epoch) identically on every rank and dealt out
// round-robin, then samples within a shard are shuffled per (seed, epoch, shard). The
// cursor (epoch, shard position, sample position, samples read) names the next sample
// exactly, so seek(cursor) followed by next() continues an interrupted read bit for bit.
// Bad content is returned as a bad raw_sample, or as shard problems riding on the next sample
// (recorded only when a shard is opened from its start, so a resume never counts twice):
// every position the cursor passes is either delivered or counted.
#pragma once

#include "core/modality.hpp"
#include "sample.hpp"
#include "storage.hpp"

#include <memory>
#include <string>
#include <vector>

namespace msomni::data {

struct source_spec {
  std::string name;
  std::string uri;
  modality kind = modality::image;
  double weight = 1.0;
};

struct rank_slot {
  uint32_t rank = 0;
  uint32_t world = 1;
};

class source_reader {
 public:
  source_reader(uint32_t index, source_spec spec, rank_slot slot, uint64_t seed, bool shuffle,
                std::shared_ptr<const storage> st);

  // The next sample (possibly marked bad). Throws std::runtime_error only when the source
  // has no shards or yields no sample in two whole epochs (a configuration error).
  raw_sample next();

  const msg::source_cursor& cursor() const noexcept { return cursor_; }
  void seek(const msg::source_cursor& c);
  const source_spec& spec() const noexcept { return spec_; }
  uint32_t index() const noexcept { return index_; }
  size_t shard_count() const noexcept { return shards_.size(); }

  // This rank's shard order for an epoch (indices into the sorted shard list). Pure.
  static std::vector<size_t> shard_order(size_t shard_count, rank_slot slot, uint64_t seed,
                                         const std::string& source, uint64_t epoch, bool shuffle);

 private:
  struct sample_entry {
    std::string key;
    std::vector<tar_member> members;
  };
  void open_epoch();
  void open_shard();
  raw_sample build(const sample_entry& e);

  uint32_t index_;
  source_spec spec_;
  rank_slot slot_;
  uint64_t seed_;
  bool shuffle_;
  std::shared_ptr<const storage> storage_;
  std::vector<std::string> shards_;
  msg::source_cursor cursor_;
  uint64_t next_seq_ = 0;
  // Derived from the cursor; rebuilt lazily after seek or when the cursor moves on.
  std::vector<size_t> order_;
  uint64_t order_epoch_ = UINT64_MAX;
  std::unique_ptr<byte_source> shard_;
  uint64_t open_shard_pos_ = UINT64_MAX;
  std::vector<sample_entry> samples_;
  std::vector<size_t> perm_;
  std::string shard_label_;
  std::vector<shard_problem> pending_problems_;  // attached to the next sample returned
};

}  // namespace msomni::data
