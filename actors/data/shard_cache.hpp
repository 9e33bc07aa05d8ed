// The local cache of remote shard bytes (io.cache_dir, io.cache_bytes).
//
// What is kept: the byte ranges read from each remote shard (one sample or run of samples
// each) and the shard's member index, in files of the cache directory named after a hash of
// the shard's url: <id>.meta (url, size, ETag), <id>.data (the ranges at their offsets, a
// sparse file), <id>.ranges (one line per range: offset, length, xxh64 of its bytes) and
// <id>.idx (the member index). Nothing else is ever created there, and nothing else is ever
// deleted: eviction removes only these four files of a tracked shard.
//
// Bounds: the bytes held (ranges, indexes, metadata) stay at or below io.cache_bytes; a range
// that does not fit evicts whole shards, least recently used first, and is not kept when even
// an empty cache would not hold it. Each process takes its own slot directory
// (<cache_dir>/slot-<n>, held by an flock on slot-<n>.lock), so the ranks of one node never
// write the same files: io.cache_bytes bounds each process.
//
// Across restarts: a slot's entries are found again at start; an entry is used only after
// its shard's size and ETag match the store's and every range's checksum matches its bytes
// (checked on the entry's first use in a process); anything else is dropped and counted.
// A write the disk refuses (full) is counted and logged, the bytes are served from memory
// and the shard's entry is dropped: never a stall.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace msomni::data {

struct object_key {
  std::string url;   // the shard's uri (s3:// or http(s)://)
  uint64_t size = 0;
  std::string etag;  // the store's ETag ("" when the server gives none: size alone is checked)
};

class shard_cache {
 public:
  // Throws std::runtime_error when the directory cannot be created or no slot can be taken.
  shard_cache(const std::string& dir, uint64_t bound);
  ~shard_cache();
  shard_cache(const shard_cache&) = delete;
  shard_cache& operator=(const shard_cache&) = delete;

  // Copies [offset, offset + n) of `k` into dst when a verified range holds it.
  bool read(const object_key& k, uint64_t offset, void* dst, size_t n);
  // Keeps [offset, offset + n) of `k` (evicting as needed; silently not when it cannot fit).
  void put(const object_key& k, uint64_t offset, const void* src, size_t n);
  std::optional<std::string> read_index(const object_key& k);
  void put_index(const object_key& k, const std::string& text);

  uint64_t bytes() const;
  const std::string& slot_dir() const noexcept { return slot_; }

 private:
  struct range {
    uint64_t length = 0;
    uint64_t hash = 0;
  };
  struct entry {
    std::string id;
    object_key key;
    std::map<uint64_t, range> ranges;  // by offset
    uint64_t bytes = 0;
    uint64_t last_use = 0;
    bool checked = false;  // key and checksums verified in this process
    bool has_index = false;
  };
  entry* find(const object_key& k, bool create);
  bool verify(entry& e, const object_key& k);
  void drop(const std::string& id, bool counted);
  bool make_room(uint64_t n, const std::string& keep);
  void write_failed(entry& e, const std::string& what, int err);
  std::string path(const std::string& id, const char* ext) const;
  void publish() const;

  std::string dir_, slot_;
  uint64_t bound_;
  int lock_fd_ = -1;
  mutable std::mutex m_;
  std::map<std::string, entry> entries_;  // by id
  uint64_t bytes_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace msomni::data
