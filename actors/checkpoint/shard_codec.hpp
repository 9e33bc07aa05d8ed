// One rank's shard file: a header, one frame per entry, an index, a footer.
//
//   header  32 B  "MSOSHRD1" u32 version(2) u32 rank u64 step u32 entry_count u32 flags(0)
//   frames        entry i's frame at index[i].offset: a zstd frame, or the raw bytes where
//                 compression does not pay (a probe of the entry says its bytes will not
//                 shrink, or the zstd frame came out no smaller)
//   index         per entry: u16 name_len, name, u8 kind, u8 codec (0 zstd, 1 stored raw),
//                 u8 ndim, i64 dims[ndim], u64 offset, u64 compressed_size (the frame's
//                 bytes), u64 raw_size, u64 frame_xxh3, u64 raw_xxh3
//                 (version 1, still read: no codec byte, every frame zstd)
//   footer  32 B  u64 index_offset u64 index_size u64 meta_xxh3(header+index) "MSOSHEND"
//
// Every byte is covered by a checksum (header+index by meta_xxh3, frames by frame_xxh3,
// content again by raw_xxh3 after decompression), so any flipped bit is detected by
// decoding alone; the manifest also holds an XXH3 of the whole file. Format in
// docs/checkpoint_format.md.
#pragma once

#include "durable_io.hpp"
#include "rank_state.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace msomni::ckpt {

enum class entry_kind : uint8_t { tensor_f32 = 0, blob = 1 };
enum class frame_codec : uint8_t { zstd = 0, raw = 1 };

struct entry_index {
  std::string name;
  entry_kind kind = entry_kind::blob;
  frame_codec codec = frame_codec::zstd;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t compressed_size = 0;
  uint64_t raw_size = 0;
  uint64_t frame_xxh3 = 0;
  uint64_t raw_xxh3 = 0;
};

struct shard_summary {
  uint64_t bytes = 0;       // file size
  uint64_t xxh3 = 0;        // XXH3_64bits of the whole file
  uint64_t raw_bytes = 0;   // uncompressed payload
  uint32_t entries = 0;
  uint32_t stored_raw = 0;  // entries whose frame is their raw bytes
};

struct codec_options {
  int zstd_level = 1;
  int zstd_threads = 2;     // ZSTD_c_nbWorkers; 0 = compress on the calling thread
};

// Holds a compression context and a reusable output buffer: fresh memory is slow to touch on
// our VMs, so one encoder lives as long as its writer.
class shard_encoder {
 public:
  explicit shard_encoder(codec_options opts);
  ~shard_encoder();
  shard_encoder(const shard_encoder&) = delete;
  shard_encoder& operator=(const shard_encoder&) = delete;

  shard_summary encode(const rank_state& state, uint32_t rank, uint64_t step, byte_sink& out);

 private:
  bool compression_pays(const void* raw, size_t raw_size);
  struct impl;
  std::unique_ptr<impl> impl_;
};

// The parsed, checksum-verified header and index of a shard (frames not yet decoded).
struct shard_layout {
  uint32_t rank = 0;
  uint64_t step = 0;
  std::vector<entry_index> entries;
};

// `where` names the file in error messages. Throws checkpoint_error on any mismatch.
shard_layout read_shard_layout(std::span<const uint8_t> bytes, const std::string& where);

// Verifies every checksum and returns the state, entries in the order they were saved.
rank_state decode_shard(std::span<const uint8_t> bytes, const std::string& where);

uint64_t xxh3_of(std::span<const uint8_t> bytes);

}  // namespace msomni::ckpt
