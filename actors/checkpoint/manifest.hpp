// The manifest of one checkpoint directory: what was saved (step, counters, world size,
// config hash, epoch, and the job config by key when the writer gives it), whether it is full or incremental, and every rank's shard with its
// size and XXH3. A line-oriented text file ending in a checksum of all lines above it, so a
// human can read it and a torn or edited manifest is refused. Names of directories and
// files in a checkpoint root are defined here too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace msomni::ckpt {

enum class checkpoint_kind { full, incremental };

struct shard_record {
  uint32_t rank = 0;
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
  uint64_t raw_bytes = 0;
  uint32_t entries = 0;
  std::string dir;  // checkpoint directory holding the file ("step-00000100"); differs from
                    // the manifest's own directory for shards an incremental one reuses
  bool operator==(const shard_record&) const = default;
};

struct checkpoint_meta {
  // Positional like the aggregate it was, so the config may be left out without a warning.
  checkpoint_meta(uint64_t step_ = 0, uint64_t micro_step_ = 0, uint32_t world_size_ = 1, uint64_t config_hash_ = 0,
                  uint64_t epoch_ = 0, std::map<std::string, std::string> config_ = {})
      : step(step_), micro_step(micro_step_), world_size(world_size_), config_hash(config_hash_), epoch(epoch_),
        config(std::move(config_)) {}
  uint64_t step = 0;
  uint64_t micro_step = 0;
  uint32_t world_size = 1;
  uint64_t config_hash = 0;
  uint64_t epoch = 0;
  // The resolved job config that wrote it: full key ("model.d_model") -> the value as TOML
  // text ("64", "\"fuyu-tiny\""). One `config KEY VALUE` line each; empty for writers that
  // do not give it (then the manifest has no such lines).
  std::map<std::string, std::string> config;
  bool operator==(const checkpoint_meta&) const = default;
};

struct manifest {
  checkpoint_meta meta;
  checkpoint_kind kind = checkpoint_kind::full;
  uint64_t base_step = 0;             // incremental only: the checkpoint it builds on
  std::vector<shard_record> shards;   // one per rank, sorted by rank
  bool operator==(const manifest&) const = default;
};

std::string render_manifest(const manifest& m);
// Throws checkpoint_error naming `where` and the line on any syntax or checksum problem.
manifest parse_manifest(std::string_view text, const std::string& where);

// Names inside a checkpoint root.
inline constexpr std::string_view manifest_file = "MANIFEST";
inline constexpr std::string_view latest_file = "latest";
std::string checkpoint_dir_name(uint64_t step);          // "step-00000100"
std::string shard_file_name(uint32_t rank);              // "shard-00003.bin"
std::optional<uint64_t> parse_checkpoint_dir_name(std::string_view name);
std::string hex64(uint64_t v);                           // 16 lowercase hex digits

}  // namespace msomni::ckpt
