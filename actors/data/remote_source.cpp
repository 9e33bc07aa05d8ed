// Reads of one remote shard and its member index (see remote_source.hpp).
#include "remote_source.hpp"

#include "member_index_text.hpp"
#include "remote_io.hpp"
#include "remote_names.hpp"
#include "remote_prefetch.hpp"

#include "core/log.hpp"

#include <algorithm>
#include <cstring>

namespace msomni::data {
namespace {

// The header walk's reads: one GET of io-window bytes serves every header inside it.
class window_source final : public byte_source {
 public:
  window_source(const remote_source& src, uint64_t window) : src_(src), window_(window) {}
  uint64_t size() const override { return src_.size(); }
  size_t read_at(uint64_t offset, void* dst, size_t n) const override {
    if (offset >= at_ && offset + n <= at_ + buf_.size()) {
      std::memcpy(dst, buf_.data() + (offset - at_), n);
      return n;
    }
    const uint64_t len = std::min<uint64_t>(std::max<uint64_t>(n, window_), size() - std::min(size(), offset));
    buf_.resize(size_t(len));
    at_ = offset;
    buf_.resize(src_.fetch(offset, buf_.data(), buf_.size()));
    const size_t k = std::min(n, buf_.size());
    std::memcpy(dst, buf_.data(), k);
    return k;
  }

 private:
  const remote_source& src_;
  uint64_t window_;
  mutable std::string buf_;
  mutable uint64_t at_ = 0;
};

}  // namespace

std::shared_ptr<const tar_listing> member_index_memory::find(const object_key& k) const {
  std::lock_guard lock(m_);
  auto it = indexes_.find(k.url);
  if (it != indexes_.end() && it->second.first.size == k.size && it->second.first.etag == k.etag) return it->second.second;
  return nullptr;
}

void member_index_memory::keep(const object_key& k, std::shared_ptr<const tar_listing> l) {
  std::lock_guard lock(m_);
  members_held_ += l->members.size();
  if (members_held_ > max_members_held) {  // a bound on memory: start over
    indexes_.clear();
    members_held_ = l->members.size();
  }
  indexes_[k.url] = {k, std::move(l)};
}

remote_source::remote_source(member_index_memory& indexes, object_key key, std::shared_ptr<shard_cache> cache)
    : indexes_(indexes), key_(std::move(key)), url_(object_url(key_.url)), cache_(std::move(cache)) {}

size_t remote_source::fetch(uint64_t offset, void* dst, size_t n) const {
  if (offset >= key_.size || n == 0) return 0;
  n = size_t(std::min<uint64_t>(n, key_.size - offset));
  http_request req;
  req.url = url_;
  req.range = {offset, offset + n - 1};
  req.sign_s3 = is_s3(key_.url);
  const auto r = http_fetch(req);
  if (r.status != 206 && r.status != 200) {
    MSOMNI_LOG(warn, "data.remote") << "GET " << key_.url << " bytes " << offset << "+" << n << ": HTTP " << r.status;
    return 0;
  }
  if (auto it = r.headers.find("etag"); !key_.etag.empty() && it != r.headers.end() && it->second != key_.etag) {
    MSOMNI_LOG(warn, "data.remote") << key_.url << " changed since it was listed (ETag " << it->second << ", was "
                                    << key_.etag << ")";
    return 0;
  }
  const size_t k = std::min(n, r.body.size());
  std::memcpy(dst, r.body.data(), k);
  return k;
}

size_t remote_source::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset >= key_.size || n == 0) return 0;
  n = size_t(std::min<uint64_t>(n, key_.size - offset));
  if (read_ahead_pool().take(key_.url, offset, dst, n)) {
    ++remote_counters().prefetch_used;
    return n;
  }
  return read_direct(offset, dst, n);
}

size_t remote_source::read_direct(uint64_t offset, void* dst, size_t n) const {
  if (offset >= key_.size || n == 0) return 0;
  n = size_t(std::min<uint64_t>(n, key_.size - offset));
  auto& c = remote_counters();
  if (cache_ && cache_->read(key_, offset, dst, n)) {
    ++c.cache_hits;
    return n;
  }
  ++c.cache_misses;
  const size_t k = fetch(offset, dst, n);
  if (cache_ && k == n) cache_->put(key_, offset, dst, n);
  return k;
}

std::shared_ptr<const tar_listing> remote_source::known_listing() const {
  std::lock_guard lock(m_);
  if (listing_) return listing_;
  if ((listing_ = indexes_.find(key_))) return listing_;
  auto& c = remote_counters();
  if (cache_)
    if (auto text = cache_->read_index(key_))
      if ((listing_ = parse_index(key_, *text))) {
        ++c.index_loaded;
        indexes_.keep(key_, listing_);
        return listing_;
      }
  window_source window(*this, std::max<uint64_t>(remote_io().index_window_bytes, tar_block_size));
  auto built = std::make_shared<tar_listing>(list_tar(window));
  ++c.index_built;
  if (cache_) cache_->put_index(key_, serialize(key_, *built));
  listing_ = built;
  indexes_.keep(key_, listing_);
  return listing_;
}

}  // namespace msomni::data
