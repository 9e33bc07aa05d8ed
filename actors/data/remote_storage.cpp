// Remote shard stores behind the storage calls: the process's remote storage (listing, object
// sizes and ETags, the cache, the read-ahead pool) and the storage that routes remote uris to
// it (see remote_storage.hpp).
#include "remote_storage.hpp"

#include "remote_io.hpp"
#include "remote_listing.hpp"
#include "remote_names.hpp"
#include "remote_prefetch.hpp"
#include "remote_source.hpp"
#include "shard_cache.hpp"

#include "config/job_config.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace msomni::data {
namespace {

class remote_storage final : public storage {
 public:
  std::vector<std::string> list_shards(const std::string& uri) const override {
    if (auto p = remote_uri_problem(uri); !p.empty()) throw std::invalid_argument(p);
    std::vector<std::string> out = is_s3(uri) ? list_s3(uri, [this](const object_key& k) { remember(k); }) : list_http(uri);
    const auto s = remote_io();
    if (!is_s3(uri) && !s.cache_dir.empty())
      for (const auto& shard : out) (void)meta_of(shard);  // sizes, for the cache bound's check
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (!s.cache_dir.empty()) {
      // A cache that cannot hold one shard is refused before anything starts.
      for (const auto& shard : out) {
        const auto k = meta_of(shard);
        if (k && k->size > s.cache_bytes)
          throw std::invalid_argument("io.cache_bytes " + std::to_string(s.cache_bytes) + " is below the size of shard " +
                                      shard + " (" + std::to_string(k->size) +
                                      " bytes); the cache must hold at least one whole shard");
      }
    }
    return out;
  }

  std::unique_ptr<byte_source> open(const std::string& path) const override {
    const auto k = meta_of(path);
    if (!k) return nullptr;
    return std::make_unique<remote_source>(indexes_, *k, cache());
  }

  // The reader's window: io.remote_prefetch draws, and half the pool's bound on bytes (the
  // rest is room for the gaps inside runs and for runs not all read yet).
  read_ahead_window read_ahead(const std::string&) const override {
    const auto s = remote_io();
    return {s.prefetch_samples, s.prefetch_bytes / 2};
  }
  void prefetch(const std::string& path, const byte_range& span, const std::vector<byte_range>& reads) const override {
    read_ahead_pool().hint(path, span, reads);
  }

  std::shared_ptr<shard_cache> cache() const {
    const auto s = remote_io();
    std::lock_guard lock(m_);
    if (s.cache_dir.empty()) return nullptr;
    if (!cache_ || cache_dir_ != s.cache_dir || cache_bound_ != s.cache_bytes) {
      cache_.reset();
      cache_ = std::make_shared<shard_cache>(s.cache_dir, s.cache_bytes);
      cache_dir_ = s.cache_dir;
      cache_bound_ = s.cache_bytes;
    }
    return cache_;
  }

  std::string slot_dir() const {
    std::lock_guard lock(m_);
    return cache_ ? cache_->slot_dir() : "";
  }

 private:
  // The object's size and ETag: remembered from its listing, else asked by a HEAD request.
  std::optional<object_key> meta_of(const std::string& uri) const {
    {
      std::lock_guard lock(m_);
      if (auto it = meta_.find(uri); it != meta_.end()) return it->second;
    }
    http_request req;
    req.method = "HEAD";
    req.url = object_url(uri);
    req.sign_s3 = is_s3(uri);
    const auto r = http_fetch(req);
    if (r.status < 200 || r.status >= 300) {
      MSOMNI_LOG(warn, "data.remote") << "HEAD " << uri << ": HTTP " << r.status;
      return std::nullopt;
    }
    object_key k;
    k.url = uri;
    if (auto it = r.headers.find("content-length"); it != r.headers.end()) k.size = std::stoull(it->second);
    if (auto it = r.headers.find("etag"); it != r.headers.end()) k.etag = it->second;
    remember(k);
    return k;
  }

  void remember(const object_key& k) const {
    std::lock_guard lock(m_);
    meta_[k.url] = k;
  }

  mutable std::mutex m_;
  mutable std::map<std::string, object_key> meta_;
  mutable member_index_memory indexes_;
  mutable std::shared_ptr<shard_cache> cache_;
  mutable std::string cache_dir_;
  mutable uint64_t cache_bound_ = 0;
};

std::mutex remote_mutex;
std::shared_ptr<remote_storage> the_remote;

std::shared_ptr<remote_storage> process_remote() {
  std::lock_guard lock(remote_mutex);
  if (!the_remote) the_remote = std::make_shared<remote_storage>();
  return the_remote;
}

// A read ahead: the shard opened and read like the reader would, without the read-ahead pool.
bool read_ahead_of(const std::string& uri, uint64_t offset, std::string& bytes) {
  try {
    const auto file = process_remote()->open(uri);
    return file && static_cast<const remote_source&>(*file).read_direct(offset, bytes.data(), bytes.size()) == bytes.size();
  } catch (const std::exception& e) {
    // The reader reads it again itself and meets the same failure with its reason.
    MSOMNI_LOG(debug, "data.remote") << "read ahead of " << uri << " failed: " << e.what();
    return false;
  }
}

class routing_storage final : public storage {
 public:
  explicit routing_storage(std::shared_ptr<storage> local) : local_(std::move(local)) {}
  std::vector<std::string> list_shards(const std::string& uri) const override {
    return is_remote_uri(uri) ? process_remote()->list_shards(uri) : local_->list_shards(uri);
  }
  std::unique_ptr<byte_source> open(const std::string& path) const override {
    return is_remote_uri(path) ? process_remote()->open(path) : local_->open(path);
  }
  read_ahead_window read_ahead(const std::string& uri) const override {
    return is_remote_uri(uri) ? process_remote()->read_ahead(uri) : local_->read_ahead(uri);
  }
  void prefetch(const std::string& path, const byte_range& span, const std::vector<byte_range>& reads) const override {
    if (is_remote_uri(path)) process_remote()->prefetch(path, span, reads);
  }

 private:
  std::shared_ptr<storage> local_;
};

}  // namespace

prefetcher& read_ahead_pool() {
  static auto* p = new prefetcher(read_ahead_of);  // its threads live as long as the process
  return *p;
}

remote_io_settings remote_io_of(const config::job_config& cfg) {
  remote_io_settings s;
  s.cache_dir = cfg.io.cache_dir;
  s.cache_bytes = uint64_t(cfg.io.cache_bytes);
  s.s3_endpoint = cfg.io.s3_endpoint;
  s.s3_region = cfg.io.s3_region;
  s.s3_credentials_file = cfg.io.s3_credentials_file;
  s.s3_profile = cfg.io.s3_profile;
  s.request_timeout_ms = cfg.io.remote_request_timeout_ms;
  s.give_up_s = cfg.io.remote_give_up_s;
  s.backoff_max_ms = cfg.io.remote_backoff_max_ms;
  s.prefetch_samples = uint64_t(cfg.io.remote_prefetch);
  return s;
}

std::shared_ptr<storage> make_remote_storage() { return process_remote(); }

std::shared_ptr<storage> make_routing_storage(std::shared_ptr<storage> local) {
  return std::make_shared<routing_storage>(std::move(local));
}

std::string remote_cache_slot_dir() { return process_remote()->slot_dir(); }

}  // namespace msomni::data
