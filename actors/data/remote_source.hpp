// One remote shard as a byte_source, with its member index built once or loaded from memory
// or the cache (internal to msomni_data).
#pragma once

#include "shard_cache.hpp"
#include "tar_format.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace msomni::data {

// The member indexes of a process's remote shards, by uri, while their object (size and
// ETag) is unchanged; bounded in members held (past the bound it starts over).
class member_index_memory {
 public:
  std::shared_ptr<const tar_listing> find(const object_key& k) const;
  void keep(const object_key& k, std::shared_ptr<const tar_listing> l);

 private:
  static constexpr size_t max_members_held = size_t(4) << 20;
  mutable std::mutex m_;
  std::map<std::string, std::pair<object_key, std::shared_ptr<const tar_listing>>> indexes_;
  size_t members_held_ = 0;
};

// Reads of one shard: a read started ahead when there is one, else the cache, else a ranged
// GET. The member index is built once by walking the tar headers in io-window sized GETs, or
// loaded from memory or the cache.
class remote_source final : public byte_source {
 public:
  remote_source(member_index_memory& indexes, object_key key, std::shared_ptr<shard_cache> cache);
  uint64_t size() const override { return key_.size; }
  size_t read_at(uint64_t offset, void* dst, size_t n) const override;
  std::shared_ptr<const tar_listing> known_listing() const override;
  // read_at without looking for a read started ahead (what the read-ahead workers run).
  size_t read_direct(uint64_t offset, void* dst, size_t n) const;

  // A raw ranged read, neither cached nor counted as a cache read (the header walk's window).
  size_t fetch(uint64_t offset, void* dst, size_t n) const;

 private:
  member_index_memory& indexes_;
  object_key key_;
  std::string url_;
  std::shared_ptr<shard_cache> cache_;
  mutable std::mutex m_;
  mutable std::shared_ptr<const tar_listing> listing_;
};

}  // namespace msomni::data
