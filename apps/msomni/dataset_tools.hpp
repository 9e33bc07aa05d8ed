// What `msomni dataset pack` and `msomni dataset check` do, apart from their command lines
// (dataset_command.cpp), so tests can call them: pack a plain folder of captioned images or
// videos into WebDataset shards, and check shards the way the data pipeline reads them.
#pragma once

#include "media_decoder.hpp"

#include "core/modality.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace msomni::cli {

// What a job refuses: a member larger than max_sample_bytes (too_large), media whose header
// states more pixels than max_*_pixels (too_many_pixels, undecoded); as io.* of a job config.
struct check_limits {
  uint64_t max_sample_bytes = uint64_t(config::io_section{}.max_sample_bytes);
  uint64_t max_image_pixels = uint64_t(config::default_max_image_pixels);
  uint64_t max_video_pixels = uint64_t(config::default_max_video_pixels);
};

struct pack_options {
  std::filesystem::path source;      // the folder walked (recursively, in name order)
  modality kind = modality::image;   // which media is packed, judged by the files' bytes (media_format.hpp)
  std::filesystem::path out;         // where shard-000000.tar ... are written
  uint64_t per_shard = 1000;         // samples per shard
  bool caption_from_name = false;    // false: a sibling KEY.txt; true: the file's stem
  check_limits limits;               // a file training would refuse by these is refused here
};

struct pack_skip {
  std::string path;
  std::string why;
};

struct pack_result {
  uint64_t packed = 0;
  std::vector<std::string> shards;   // the shard files written, in order
  std::vector<pack_skip> skipped;    // files not packed, each with the reason
};

// Packs `o.source` into `o.out`. Throws std::runtime_error (nothing written) when the source
// is no directory or `o.out` already holds .tar files. Each shard is written under a
// temporary name, fsynced and renamed into place, so a crash leaves no partial shard.
pack_result pack_dataset(const pack_options& o);

struct check_problem {
  std::string shard;    // the shard's file name
  std::string key;      // the sample's key ("" for a problem of the whole shard)
  std::string problem;  // bad_tar_header, truncated_shard, unreadable_shard, missing_member, empty_caption,
                        // invalid_utf8, too_large, corrupt_image, corrupt_video, mismatched_name
  std::string detail;
};

struct check_result {
  std::string uri;
  std::vector<std::pair<std::string, uint64_t>> shards;  // path, samples
  std::array<uint64_t, modality_count> samples{};         // per modality
  uint64_t problems = 0;                                  // all problems found
  std::vector<check_problem> listed;                      // the first check_problems_listed_max of them
};

inline constexpr size_t check_problems_listed_max = 1000;

// Lists the shards of `uri` (a directory, a .tar file or a pattern, as a data source's uri),
// groups each shard's members into samples as the reader does, and checks every sample: its
// members present and within max_sample_bytes, its caption text, its media decoded by the
// real decoder. `kind`: every sample is of that modality; nullopt: each sample's modality is
// what its media member's extension says (media_format.hpp; none: text). Throws
// std::invalid_argument for a uri that names nothing or a malformed pattern.
// `max_image_pixels` / `max_video_pixels`: media stating more is too_many_pixels, undecoded.
check_result check_dataset(const std::string& uri, std::optional<modality> kind, const check_limits& limits);

}  // namespace msomni::cli
