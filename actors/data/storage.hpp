// Where shards come from: local and NFS paths, and remote stores (s3://, http(s)://, see
// remote_storage.hpp) behind the same two calls, so the reader never touches either directly.
#pragma once

#include "read_ahead_window.hpp"
#include "tar_format.hpp"

#include <memory>
#include <string>
#include <vector>

namespace msomni::data {

// [offset, offset + length) of a shard.
struct byte_range {
  uint64_t offset = 0;
  uint64_t length = 0;
};

class storage {
 public:
  virtual ~storage() = default;
  // Shard paths of a source uri, sorted by name so every rank sees the same list.
  // A uri is a directory (all *.tar inside), a single .tar file, or a pattern naming .tar
  // files (core/shard_pattern.hpp: `dir/shard-00000?.tar`, `dir/shard-{000..009}.tar`), each
  // optionally with file://. A malformed pattern throws std::invalid_argument with the reason.
  virtual std::vector<std::string> list_shards(const std::string& uri) const = 0;
  // Opens one shard; nullptr when it cannot be opened (the caller counts it, never crashes).
  virtual std::unique_ptr<byte_source> open(const std::string& path) const = 0;
  // How far the reader of the source at `uri` hints ahead of its reads (read_ahead_window.hpp;
  // samples 0: none, local storage).
  virtual read_ahead_window read_ahead(const std::string& /*uri*/) const { return {}; }
  // A hint that `reads` of shard `path` (ranges inside `span`, each read once) will be read
  // soon: remote storage reads `span` with one GET in the background, within its bounds, and
  // serves the reads from it; local storage ignores it.
  virtual void prefetch(const std::string& /*path*/, const byte_range& /*span*/,
                        const std::vector<byte_range>& /*reads*/) const {}
};

// POSIX files read with pread (one descriptor per open shard); s3:// and http(s):// uris and
// the shard uris they list go to the process's remote storage (remote_storage.hpp).
std::shared_ptr<storage> make_local_storage();

// Whole file in memory: the decoder bench and tests use it to take storage out of timing.
class memory_source final : public byte_source {
 public:
  explicit memory_source(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  size_t read_at(uint64_t offset, void* dst, size_t n) const override;

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace msomni::data
