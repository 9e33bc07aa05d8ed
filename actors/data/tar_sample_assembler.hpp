// Tar members into samples (key.jpg + key.txt -> one sample), the members a sample uses, and
// the raw sample their bytes make. Pure: callers read the bytes it names and hand them in.
#pragma once

#include "core/modality.hpp"
#include "sample.hpp"
#include "tar_listing.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msomni::data {

// WebDataset names: "dir/000123.seg.jpg" -> key "dir/000123", extension "seg.jpg".
std::pair<std::string, std::string> split_member(const std::string& name);
// What a member is to a sample of `kind`: its caption (.txt), its media (an extension of a
// format of that modality, media_format.hpp), or nothing the decoder reads (skipped, never read).
enum class member_use { none, caption, media };
member_use use_of(const std::string& extension, modality kind);

// The samples of one shard in tar order: a key and its adjacent members.
struct shard_sample {
  std::string key;
  std::vector<tar_member> members;
};
using shard_listing = std::vector<shard_sample>;

// Members fed in tar order, samples out. Members of one key are adjacent in a WebDataset
// shard, so a member of another key completes the sample before it (a key seen again later
// starts a new sample).
class sample_grouper {
 public:
  // The sample `m` completes (the run of the key before it), if any.
  std::optional<shard_sample> add(const tar_member& m);
  // The last sample, once every member was added (nullopt when there was none).
  std::optional<shard_sample> finish();

 private:
  shard_sample current_;
};

// Every sample of a listing, in tar order (a sample_grouper fed all its members).
shard_listing group_samples(const tar_listing& listing);

// One member a sample uses, and what for.
struct member_read {
  const tar_member* member = nullptr;
  member_use use = member_use::none;
};

// What a sample of one modality needs read: its caption and media members, in tar order.
struct sample_reads {
  std::vector<member_read> reads;
  // The first used member larger than the bound: the sample is too_large and nothing is read
  // (a header may claim any size; reading what it claims could exhaust memory).
  const tar_member* too_large = nullptr;
  // A sample's members are adjacent in the tar (header, data, header, data): when more than
  // one is used and the span from the first one's data to the last one's end holds little else
  // (headers and padding, never another large member), one read of
  // [span_offset, span_offset + span_bytes) replaces one read per member. 0: read each alone.
  uint64_t span_offset = 0;
  uint64_t span_bytes = 0;
};

// The members of `s` a sample of `kind` uses; references members of `s`, which must outlive it.
sample_reads plan_reads(const shard_sample& s, modality kind, uint64_t max_member_bytes);

// Why `m` makes its sample too_large, in the words training and the checks use.
std::string too_large_cause(const tar_member& m, uint64_t max_member_bytes);

// One raw sample from the bytes of its planned reads, judged by the raw stage's rule
// (check_raw_sample): a caption and, unless text, a non-empty media member, the caption valid.
class raw_sample_assembler {
 public:
  // `start`: the sample with its kind and key (and any position or shard damage) set.
  explicit raw_sample_assembler(raw_sample start) : s_(std::move(start)) {}

  // The bytes read for one planned member; `complete` false when the read came back short
  // (the member then counts as absent). A later member of the same use replaces an earlier.
  void add(const member_read& r, std::vector<uint8_t> bytes, bool complete);
  // The sample, bad as too_large because of `m` (nothing was read).
  raw_sample too_large(const tar_member& m, uint64_t max_member_bytes) &&;
  // The sample, marked bad with the reason when the raw checks refuse it.
  raw_sample finish() &&;

  bool has_media() const noexcept { return has_media_; }
  bool has_caption() const noexcept { return has_caption_; }

 private:
  raw_sample s_;
  bool has_media_ = false;
  bool has_caption_ = false;
};

}  // namespace msomni::data
