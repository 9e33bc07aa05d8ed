// The values that flow between data stages: a raw sample (tar members of one key), a decoded
// sample (pixels/tokens), the reasons a sample can be bad, and the counters that report them.
// Plain structs without CAF so cores, tests and the simulator include them cheaply.
#pragma once

#include "core/modality.hpp"
#include "messages/data_messages.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace msomni::data {

enum class bad_reason : uint8_t {
  bad_tar_header = 0,   // a run of blocks in a shard that were not valid ustar headers
  truncated_shard,      // a shard ended inside a header or a member's data
  missing_member,       // a key lacks its media or its caption (media_format.hpp's extensions + .txt)
  empty_caption,        // caption is empty or whitespace only
  invalid_utf8,         // caption is not valid UTF-8
  corrupt_image,        // an image failed to decode (truncated, damaged, or no format msomni decodes)
  corrupt_video,        // a video failed to demux or decode
  unreadable_shard,     // storage could not open or read the shard
  too_large,            // a member it needs is larger than io.max_sample_bytes (never read)
  too_many_pixels,      // its header states more pixels than io.max_image_pixels / io.max_video_pixels (never decoded)
};
inline constexpr int bad_reason_count = 10;
const char* to_string(bad_reason r);

// Counts per reason, the last few sample keys per reason for the report, and the distinct
// samples behind the counts: each bad (or mismatched-name) sample once, with its reason, the
// cause in words and how often it was drawn (a bad file of a small source is drawn every
// epoch). At most samples_max distinct samples are listed; later ones are only counted.
struct seen_sample {
  std::string reason;  // a bad_reason's name, or "mismatched_name"
  std::string cause;
  uint64_t draws = 0;
};

struct bad_data_counts {
  static constexpr size_t samples_max = 64;
  std::array<uint64_t, bad_reason_count> count{};
  std::map<bad_reason, std::vector<std::string>> recent_keys;  // at most 8 per reason
  std::map<std::string, seen_sample> samples;  // by key ("<shard>/<member key>", or a shard's name)
  uint64_t unlisted_draws = 0;                 // draws of samples past samples_max
  uint64_t mismatched = 0;                     // good samples whose names say another format
  uint64_t operator[](bad_reason r) const { return count[size_t(r)]; }
  uint64_t total() const;
  void add(bad_reason r, const std::string& key, const std::string& cause = {});
  // A good sample decoded by its bytes, which are `format`, not what its name says.
  void add_mismatched(const std::string& key, const std::string& format);
  void merge(const bad_data_counts& other);
  std::string report() const;  // one line: "bad_tar_header=1 corrupt_image=2 ..."

 private:
  void see(const std::string& key, const std::string& reason, const std::string& cause, uint64_t draws);
};

// Where a sample sits: its source, the source's draw number (its place in the source's own
// order, source_reader.hpp) and a per-source sequence number of this rank's samples, so
// downstream stages restore source order after parallel decoding.
struct sample_position {
  uint32_t source = 0;
  uint64_t seq = 0;
  uint64_t draw = 0;
};

// Damage found in a shard as a whole (bad headers, truncation, unreadable), carried by the
// draw at the shard's start position in each epoch and counted when that sample is consumed
// by the rank that owns it: once per epoch, whatever the world size, read-ahead or restores.
using shard_problem = std::pair<bad_reason, std::string>;  // reason, shard name

struct raw_sample {
  std::string key;       // "<shard file name>/<member key>", unique and readable in logs
  modality kind = modality::image;
  sample_position pos;
  std::vector<uint8_t> media;  // the media member's bytes (empty for text)
  std::string media_ext;       // the media member's extension, lower case ("jpg", "mov", ...), or ""
  std::string caption;         // .txt contents
  bool bad = false;            // already known bad at the raw stage (then `reason` says why)
  bad_reason reason = bad_reason::missing_member;
  std::string cause;           // when bad: what exactly, for a person ("no .txt caption member")
  std::vector<shard_problem> shard_problems;
};

struct decoded_sample {
  std::string key;
  modality kind = modality::image;
  sample_position pos;
  bool bad = false;               // unusable; after decode_or_replace: no good replacement found
  bad_reason reason = bad_reason::corrupt_image;
  std::string cause;              // when bad: what exactly ("the H.264 decoder refused packet 3: ...")
  // The slot's own sample was bad (counted under replaced_reason with replaced_key) and this
  // is the next good sample of the same source in its order (see sample_repair.hpp).
  bool replaced = false;
  bad_reason replaced_reason = bad_reason::corrupt_image;
  std::string replaced_key;
  std::string replaced_cause;
  uint32_t bad_run = 0;           // bad samples met before this one (replacement attempts)
  bool downgraded = false;        // video decoded keyframe-only
  // The format its media bytes are ("png") when its name said another accepted one (a PNG
  // named .jpeg): decoded by the bytes and counted as a mismatched name, not as bad.
  std::string mismatched_as;
  uint32_t frames = 0;            // frames held in `pixels` (1 for images, video_frames for video)
  uint32_t unique_frames = 0;     // distinct decoded frames (1 when downgraded)
  std::vector<uint8_t> pixels;    // frames x image_size x image_size x RGB
  std::vector<int32_t> tokens;    // byte-level tokens with BOS/EOS
  double decode_ms = 0;           // measured by the driver that decoded it (0 in pure tests)
  std::vector<shard_problem> shard_problems;
};

// Raw-stage validation: which reason (if any) makes this sample unusable before decoding.
// Pure: looks only at the members present and the caption bytes.
bool check_raw_sample(raw_sample& s, bool has_media, bool has_caption);
bool valid_utf8(std::string_view text);

}  // namespace msomni::data
