// Remote shard stores: listing, member indexes, ranged reads (see remote_storage.hpp).
#include "remote_storage.hpp"

#include "remote_io.hpp"
#include "shard_cache.hpp"

#include "config/job_config.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <thread>
#include <tuple>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace msomni::data {
namespace {

bool is_s3(const std::string& uri) { return uri.rfind("s3://", 0) == 0; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// "s3://bucket/key" -> (bucket, key)
std::pair<std::string, std::string> bucket_key(const std::string& uri) {
  const std::string rest = uri.substr(5);
  const auto slash = rest.find('/');
  if (slash == std::string::npos) return {rest, ""};
  return {rest.substr(0, slash), rest.substr(slash + 1)};
}

std::string object_url(const std::string& uri) {
  if (!is_s3(uri)) return uri;
  const auto [bucket, key] = bucket_key(uri);
  return remote_io().s3_endpoint + "/" + uri_encode(bucket) + "/" + uri_encode(key, false);
}

std::string xml_unescape(std::string s) {
  static const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&#34;", "\""}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents) {
    size_t at = 0;
    while ((at = s.find(from, at)) != std::string::npos) {
      s.replace(at, std::strlen(from), to);
      at += std::strlen(to);
    }
  }
  return s;
}

// The text of the first <tag>...</tag> in [from, to) of xml; npos-safe.
std::string xml_field(const std::string& xml, const std::string& tag, size_t from = 0, size_t to = std::string::npos) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const auto a = xml.find(open, from);
  if (a == std::string::npos || (to != std::string::npos && a >= to)) return "";
  const auto b = xml.find(close, a);
  if (b == std::string::npos) return "";
  return xml_unescape(xml.substr(a + open.size(), b - a - open.size()));
}

std::string serialize(const object_key& k, const tar_listing& l) {
  std::ostringstream out;
  out << "msomni-index 1\n" << k.size << "\n" << k.etag << "\n";
  out << l.bad_header_runs << " " << (l.truncated ? 1 : 0) << " " << l.members.size() << "\n";
  for (const auto& m : l.members) out << m.data_offset << " " << m.size << " " << m.name << "\n";
  return out.str();
}

std::shared_ptr<const tar_listing> parse_index(const object_key& k, const std::string& text) {
  std::istringstream in(text);
  std::string line, size, etag;
  if (!std::getline(in, line) || line != "msomni-index 1" || !std::getline(in, size) || !std::getline(in, etag))
    return nullptr;
  if (size != std::to_string(k.size) || etag != k.etag) return nullptr;
  auto l = std::make_shared<tar_listing>();
  size_t count = 0;
  int truncated = 0;
  if (!(in >> l->bad_header_runs >> truncated >> count)) return nullptr;
  l->truncated = truncated != 0;
  std::getline(in, line);
  for (size_t i = 0; i < count; ++i) {
    tar_member m;
    if (!std::getline(in, line)) return nullptr;
    std::istringstream ls(line);
    if (!(ls >> m.data_offset >> m.size)) return nullptr;
    ls.get();
    std::getline(ls, m.name);
    if (m.data_offset + m.size > k.size) return nullptr;
    l->members.push_back(std::move(m));
  }
  return l;
}

class remote_storage;

// Reads of one shard: ranged GETs (or the cache), the member index built or loaded once.
class remote_source final : public byte_source {
 public:
  remote_source(const remote_storage& owner, object_key key, std::shared_ptr<shard_cache> cache)
      : owner_(owner), key_(std::move(key)), url_(object_url(key_.url)), cache_(std::move(cache)) {}
  uint64_t size() const override { return key_.size; }
  size_t read_at(uint64_t offset, void* dst, size_t n) const override;
  std::shared_ptr<const tar_listing> known_listing() const override;
  // read_at without looking for a read started ahead (what the read-ahead workers run).
  size_t read_direct(uint64_t offset, void* dst, size_t n) const;

  // A raw ranged read, neither cached nor counted as a cache read (the header walk's window).
  size_t fetch(uint64_t offset, void* dst, size_t n) const;

 private:
  const remote_storage& owner_;
  object_key key_;
  std::string url_;
  std::shared_ptr<shard_cache> cache_;
  mutable std::mutex m_;
  mutable std::shared_ptr<const tar_listing> listing_;
};

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

// Reads started ahead of use (storage::prefetch), on a few threads of their own, each with its
// own connection. Bounded: at most io.remote_prefetch reads per source are hinted, the bytes
// held (queued, in flight or done and not yet taken) stay under prefetch_bytes, and a hint
// that does not fit, or a done read that is never taken, is dropped and counted.
class prefetcher {
 public:
  using key = std::tuple<std::string, uint64_t, uint64_t>;  // shard uri, offset, length

  void hint(const std::string& uri, uint64_t offset, uint64_t length) {
    const auto s = remote_io();
    auto& c = remote_counters();
    if (s.prefetch_samples == 0 || length == 0) return;
    std::lock_guard lock(m_);
    const key k{uri, offset, length};
    if (slots_.count(k)) return;
    const size_t max_slots = size_t(std::max<uint64_t>(1, s.prefetch_samples)) * 64;
    while (held_ + length > s.prefetch_bytes || slots_.size() >= max_slots) {
      auto oldest = slots_.end();
      for (auto it = slots_.begin(); it != slots_.end(); ++it)
        if (it->second.st == state::done && !it->second.claimed &&
            (oldest == slots_.end() || it->second.seq < oldest->second.seq))
          oldest = it;
      if (oldest == slots_.end()) {
        ++c.prefetch_dropped;
        return;
      }
      held_ -= std::get<2>(oldest->first);
      slots_.erase(oldest);
      ++c.prefetch_dropped;
    }
    slots_[k].seq = ++seq_;
    held_ += length;
    queue_.push_back(k);
    ++c.prefetch_issued;
    const size_t want = size_t(std::min<uint64_t>(s.prefetch_samples, 16));
    for (; threads_ < want; ++threads_) std::thread([this] { work(); }).detach();
    cv_.notify_one();
  }

  // The bytes of a read hinted before: waits while it runs; false when none was hinted (or it
  // had not started: the caller reads it itself then).
  bool take(const std::string& uri, uint64_t offset, void* dst, size_t n) {
    std::unique_lock lock(m_);
    const key k{uri, offset, n};
    auto it = slots_.find(k);
    if (it == slots_.end()) return false;
    if (it->second.st == state::queued) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), k));
      held_ -= n;
      slots_.erase(it);
      return false;
    }
    it->second.claimed = true;
    done_.wait(lock, [&] { return it->second.st == state::done; });
    const bool ok = it->second.ok && it->second.bytes.size() == n;
    if (ok) std::memcpy(dst, it->second.bytes.data(), n);
    held_ -= n;
    slots_.erase(it);
    return ok;
  }

 private:
  enum class state { queued, running, done };
  struct slot {
    state st = state::queued;
    bool claimed = false;
    bool ok = false;
    uint64_t seq = 0;
    std::string bytes;
  };

  void work();

  std::mutex m_;
  std::condition_variable cv_, done_;
  std::deque<key> queue_;
  std::map<key, slot> slots_;
  uint64_t held_ = 0, seq_ = 0;
  size_t threads_ = 0;
};

prefetcher& read_ahead_pool() {
  static auto* p = new prefetcher;  // its threads live as long as the process
  return *p;
}

class remote_storage final : public storage {
 public:
  std::vector<std::string> list_shards(const std::string& uri) const override {
    if (auto p = remote_uri_problem(uri); !p.empty()) throw std::invalid_argument(p);
    std::vector<std::string> out = is_s3(uri) ? list_s3(uri) : list_http(uri);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    const auto s = remote_io();
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
    return std::make_unique<remote_source>(*this, *k, cache());
  }

  size_t read_ahead(const std::string&) const override { return size_t(remote_io().prefetch_samples); }
  void prefetch(const std::string& path, uint64_t offset, uint64_t length) const override {
    read_ahead_pool().hint(path, offset, length);
  }

  std::shared_ptr<const tar_listing> index_of(const object_key& k) const {
    std::lock_guard lock(m_);
    auto it = indexes_.find(k.url);
    if (it != indexes_.end() && it->second.first.size == k.size && it->second.first.etag == k.etag) return it->second.second;
    return nullptr;
  }
  void keep_index(const object_key& k, std::shared_ptr<const tar_listing> l) const {
    std::lock_guard lock(m_);
    members_held_ += l->members.size();
    if (members_held_ > max_members_held) {  // a bound on memory: start over
      indexes_.clear();
      members_held_ = l->members.size();
    }
    indexes_[k.url] = {k, std::move(l)};
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
  static constexpr size_t max_members_held = size_t(4) << 20;

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

  std::vector<std::string> list_s3(const std::string& uri) const {
    const auto [bucket, key] = bucket_key(uri);
    if (ends_with(key, ".tar")) return {uri};
    std::string prefix = key;
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    std::vector<std::string> out;
    std::string token;
    for (int page = 0; page < 100000; ++page) {
      std::vector<std::pair<std::string, std::string>> q{{"list-type", "2"}, {"delimiter", "/"}, {"prefix", prefix}};
      if (!token.empty()) q.emplace_back("continuation-token", token);
      std::sort(q.begin(), q.end());
      std::string query;
      for (const auto& [k, v] : q) query += (query.empty() ? "" : "&") + uri_encode(k) + "=" + uri_encode(v);
      http_request req;
      req.url = remote_io().s3_endpoint + "/" + uri_encode(bucket) + "?" + query;
      req.sign_s3 = true;
      const auto r = http_fetch(req);
      if (r.status == 404) return {};
      if (r.status != 200)
        throw std::runtime_error("listing " + uri + ": HTTP " + std::to_string(r.status) + " " +
                                 xml_field(r.body, "Code") + " " + xml_field(r.body, "Message"));
      size_t at = 0;
      while ((at = r.body.find("<Contents>", at)) != std::string::npos) {
        const auto end = r.body.find("</Contents>", at);
        object_key k;
        const std::string name = xml_field(r.body, "Key", at, end);
        k.url = "s3://" + bucket + "/" + name;
        k.size = std::stoull("0" + xml_field(r.body, "Size", at, end));
        k.etag = xml_field(r.body, "ETag", at, end);
        if (ends_with(name, ".tar") && name.find('/', prefix.size()) == std::string::npos) {
          remember(k);
          out.push_back(k.url);
        }
        at = end == std::string::npos ? r.body.size() : end;
      }
      if (xml_field(r.body, "IsTruncated") != "true") break;
      token = xml_field(r.body, "NextContinuationToken");
      if (token.empty()) break;
    }
    return out;
  }

  std::vector<std::string> list_http(const std::string& uri) const {
    if (ends_with(uri, ".tar")) return {uri};
    const std::string list = uri.back() == '/' ? uri + "shards.txt" : uri;
    http_request req;
    req.url = list;
    const auto r = http_fetch(req);
    if (r.status == 404) return {};
    if (r.status != 200) throw std::runtime_error("reading the shard list " + list + ": HTTP " + std::to_string(r.status));
    const std::string base = list.substr(0, list.rfind('/') + 1);
    std::vector<std::string> out;
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      const auto first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      line = line.substr(first);
      if (!ends_with(line, ".tar")) continue;
      out.push_back(line.find("://") != std::string::npos ? line : base + line);
    }
    const auto s = remote_io();
    if (!s.cache_dir.empty())
      for (const auto& shard : out) (void)meta_of(shard);  // sizes, for the cache bound's check
    return out;
  }

  mutable std::mutex m_;
  mutable std::map<std::string, object_key> meta_;
  mutable std::map<std::string, std::pair<object_key, std::shared_ptr<const tar_listing>>> indexes_;
  mutable size_t members_held_ = 0;
  mutable std::shared_ptr<shard_cache> cache_;
  mutable std::string cache_dir_;
  mutable uint64_t cache_bound_ = 0;
};

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
  if ((listing_ = owner_.index_of(key_))) return listing_;
  auto& c = remote_counters();
  if (cache_)
    if (auto text = cache_->read_index(key_))
      if ((listing_ = parse_index(key_, *text))) {
        ++c.index_loaded;
        owner_.keep_index(key_, listing_);
        return listing_;
      }
  window_source window(*this, std::max<uint64_t>(remote_io().index_window_bytes, tar_block_size));
  auto built = std::make_shared<tar_listing>(list_tar(window));
  ++c.index_built;
  if (cache_) cache_->put_index(key_, serialize(key_, *built));
  listing_ = built;
  owner_.keep_index(key_, listing_);
  return listing_;
}

std::mutex remote_mutex;
std::shared_ptr<remote_storage> the_remote;

std::shared_ptr<remote_storage> process_remote() {
  std::lock_guard lock(remote_mutex);
  if (!the_remote) the_remote = std::make_shared<remote_storage>();
  return the_remote;
}

void prefetcher::work() {
  for (;;) {
    key k;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !queue_.empty(); });
      k = queue_.front();
      queue_.pop_front();
      slots_[k].st = state::running;
    }
    std::string bytes(size_t(std::get<2>(k)), '\0');
    bool ok = false;
    try {
      const auto file = process_remote()->open(std::get<0>(k));
      if (file) ok = static_cast<const remote_source&>(*file).read_direct(std::get<1>(k), bytes.data(), bytes.size()) == bytes.size();
    } catch (const std::exception& e) {
      // The reader reads it again itself and meets the same failure with its reason.
      MSOMNI_LOG(debug, "data.remote") << "read ahead of " << std::get<0>(k) << " failed: " << e.what();
    }
    std::lock_guard lock(m_);
    auto& sl = slots_[k];
    sl.st = state::done;
    sl.ok = ok;
    sl.bytes = std::move(bytes);
    done_.notify_all();
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
  size_t read_ahead(const std::string& uri) const override {
    return is_remote_uri(uri) ? process_remote()->read_ahead(uri) : local_->read_ahead(uri);
  }
  void prefetch(const std::string& path, uint64_t offset, uint64_t length) const override {
    if (is_remote_uri(path)) process_remote()->prefetch(path, offset, length);
  }

 private:
  std::shared_ptr<storage> local_;
};

}  // namespace

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
