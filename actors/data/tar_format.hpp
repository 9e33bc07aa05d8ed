// ustar (POSIX tar) writing and header-level reading for WebDataset shards. Our own small
// implementation: shards only need regular files with short names, and the reader must
// survive corrupt headers (resynchronise on the next valid header and say how many runs
// of garbage it skipped) instead of giving up on the whole shard.
#pragma once

#include "tar_listing.hpp"

#include <array>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::data {

using tar_header_block = std::array<char, tar_block_size>;

// A ustar header for a regular file `name` (<= 99 bytes) of `size` bytes, checksum filled.
tar_header_block make_ustar_header(std::string_view name, uint64_t size);

// Appends regular files to a .tar file. finish() writes the two zero end blocks; the
// destructor calls it if the owner did not (errors there are swallowed, so call it).
class tar_writer {
 public:
  explicit tar_writer(const std::string& path);  // throws std::runtime_error on open failure
  ~tar_writer();
  tar_writer(const tar_writer&) = delete;
  tar_writer& operator=(const tar_writer&) = delete;

  void add(std::string_view name, std::span<const uint8_t> bytes);
  void finish();
  uint64_t bytes_written() const noexcept { return written_; }

 private:
  std::string path_;
  std::ofstream out_;
  uint64_t written_ = 0;
  bool finished_ = false;
};

// Random access to a shard's bytes; storage (local files, remote stores) implements it.
class byte_source {
 public:
  virtual ~byte_source() = default;
  virtual uint64_t size() const = 0;
  // Reads up to n bytes at offset; returns the count read (short only at end of data).
  virtual size_t read_at(uint64_t offset, void* dst, size_t n) const = 0;
  // The member listing when the source already has it (a remote shard's member index):
  // list_tar returns it instead of reading each header. nullptr: list_tar walks the headers.
  virtual std::shared_ptr<const tar_listing> known_listing() const { return nullptr; }
};

// Walks the headers of a tar held in `src`. Never throws on bad content; reports it.
tar_listing list_tar(const byte_source& src);
// The same walk, stopped early once `more(member)` returns false for a member just listed
// (a probe that needs only the first few members reads only their headers).
tar_listing list_tar(const byte_source& src, const std::function<bool(const tar_member&)>& more);

// True when `block` is a well-formed ustar/gnu header whose checksum matches.
bool valid_tar_header(const tar_header_block& block);

}  // namespace msomni::data
