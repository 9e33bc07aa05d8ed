// The bounded local cache of remote shard bytes (see shard_cache.hpp).
#include "shard_cache.hpp"

#include "core/log.hpp"
#include "remote_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace msomni::data {
namespace {

namespace fs = std::filesystem;

std::string id_of(const std::string& url) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(url.data(), url.size(), 0)));
  return buf;
}

bool is_entry_file(const std::string& name, std::string& id) {
  // <16 hex>.meta only; the other three files follow from it.
  if (name.size() != 21 || name.substr(16) != ".meta") return false;
  for (size_t i = 0; i < 16; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  id = name.substr(0, 16);
  return true;
}

uint64_t file_size_or_zero(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

bool write_file(const std::string& p, const std::string& text) {
  const std::string tmp = p + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

}  // namespace

std::string shard_cache::path(const std::string& id, const char* ext) const { return slot_ + "/" + id + ext; }

shard_cache::shard_cache(const std::string& dir, uint64_t bound) : dir_(dir), bound_(bound) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("io.cache_dir " + dir_ + " cannot be created: " + ec.message());
  for (int n = 0; n < 256 && lock_fd_ < 0; ++n) {
    const std::string lock = dir_ + "/slot-" + std::to_string(n) + ".lock";
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("io.cache_dir " + dir_ + " is not writable: " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      lock_fd_ = fd;
      slot_ = dir_ + "/slot-" + std::to_string(n);
    } else {
      ::close(fd);
    }
  }
  if (lock_fd_ < 0) throw std::runtime_error("io.cache_dir " + dir_ + ": all 256 slots are held by other processes");
  fs::create_directories(slot_, ec);
  if (ec) throw std::runtime_error("io.cache_dir slot " + slot_ + " cannot be created: " + ec.message());
  // Entries left by an earlier process: the oldest used are evicted first.
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& f : fs::directory_iterator(slot_, ec)) {
    std::string id;
    if (!is_entry_file(f.path().filename().string(), id)) continue;
    std::ifstream meta(f.path());
    entry e;
    e.id = id;
    std::string size;
    if (!std::getline(meta, e.key.url) || !std::getline(meta, size) || !std::getline(meta, e.key.etag) ||
        id_of(e.key.url) != id) {
      drop(id, true);  // not an entry this cache wrote as a whole: its files go
      continue;
    }
    e.key.size = std::stoull(size);
    std::ifstream log(path(id, ".ranges"));
    uint64_t off = 0, len = 0, hash = 0;
    while (log >> off >> len >> std::hex >> hash >> std::dec) {
      e.ranges[off] = {len, hash};
      e.bytes += len;
    }
    e.has_index = fs::exists(path(id, ".idx"), ec);
    e.bytes += file_size_or_zero(path(id, ".idx")) + file_size_or_zero(path(id, ".meta"));
    struct stat st {};
    const int64_t used = ::stat(path(id, ".ranges").c_str(), &st) == 0 ? int64_t(st.st_mtime) : 0;
    found.emplace_back(used, id);
    bytes_ += e.bytes;
    entries_[id] = std::move(e);
  }
  std::sort(found.begin(), found.end());
  for (const auto& [t, id] : found) entries_[id].last_use = ++tick_;
  make_room(0, "");
  remote_counters().cache_capacity = bound_;
  publish();
}

shard_cache::~shard_cache() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

uint64_t shard_cache::bytes() const {
  std::lock_guard lock(m_);
  return bytes_;
}

void shard_cache::publish() const { remote_counters().cache_bytes = bytes_; }

void shard_cache::drop(const std::string& id, bool counted) {
  std::error_code ec;
  for (const char* ext : {".data", ".ranges", ".idx", ".meta"}) fs::remove(path(id, ext), ec);
  if (auto it = entries_.find(id); it != entries_.end()) {
    bytes_ -= std::min(bytes_, it->second.bytes);
    entries_.erase(it);
  }
  if (counted) ++remote_counters().cache_rejected;
  publish();
}

bool shard_cache::make_room(uint64_t n, const std::string& keep) {
  while (bytes_ + n > bound_) {
    const entry* lru = nullptr;
    for (const auto& [id, e] : entries_)
      if (id != keep && (!lru || e.last_use < lru->last_use)) lru = &e;
    if (!lru) return false;
    const std::string id = lru->id;
    drop(id, false);
    ++remote_counters().cache_evictions;
  }
  return true;
}

shard_cache::entry* shard_cache::find(const object_key& k, bool create) {
  const std::string id = id_of(k.url);
  auto it = entries_.find(id);
  if (it != entries_.end() && !verify(it->second, k)) it = entries_.end();
  if (it == entries_.end()) {
    if (!create) return nullptr;
    std::ostringstream meta;
    meta << k.url << "\n" << k.size << "\n" << k.etag << "\n";
    const uint64_t need = meta.str().size();
    if (!make_room(need, "")) return nullptr;
    if (!write_file(path(id, ".meta"), meta.str())) {
      ++remote_counters().cache_write_failed;
      return nullptr;
    }
    entry e;
    e.id = id;
    e.key = k;
    e.bytes = need;
    e.checked = true;
    bytes_ += need;
    it = entries_.emplace(id, std::move(e)).first;
    publish();
  }
  it->second.last_use = ++tick_;
  return &it->second;
}

// First use in this process: the store's size and ETag must match the entry's, and every
// range its checksum. A mismatch drops the whole entry (the shard changed, or the bytes did).
bool shard_cache::verify(entry& e, const object_key& k) {
  if (e.checked) {
    if (e.key.size == k.size && e.key.etag == k.etag) return true;
    drop(e.id, true);
    return false;
  }
  if (e.key.size != k.size || e.key.etag != k.etag) {
    drop(e.id, true);
    return false;
  }
  const int fd = ::open(path(e.id, ".data").c_str(), O_RDONLY | O_CLOEXEC);
  std::vector<char> buf;
  bool good = true;
  for (const auto& [off, r] : e.ranges) {
    buf.resize(size_t(r.length));
    if (fd < 0 || ::pread(fd, buf.data(), buf.size(), off_t(off)) != ssize_t(buf.size()) ||
        XXH64(buf.data(), buf.size(), 0) != r.hash) {
      good = false;
      break;
    }
  }
  if (fd >= 0) ::close(fd);
  if (!good) {
    MSOMNI_LOG(warn, "data.cache") << "cached bytes of " << e.key.url << " fail their checksum; the entry is dropped";
    drop(e.id, true);
    return false;
  }
  e.checked = true;
  return true;
}

bool shard_cache::read(const object_key& k, uint64_t offset, void* dst, size_t n) {
  std::lock_guard lock(m_);
  entry* e = find(k, false);
  if (!e) return false;
  auto it = e->ranges.upper_bound(offset);
  if (it == e->ranges.begin()) return false;
  --it;
  if (it->first + it->second.length < offset + n) return false;
  const int fd = ::open(path(e->id, ".data").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::pread(fd, dst, n, off_t(offset)) == ssize_t(n);
  ::close(fd);
  return ok;
}

void shard_cache::write_failed(entry& e, const std::string& what, int err) {
  const uint64_t n = ++remote_counters().cache_write_failed;
  if (n == 1 || n % 100 == 0) {
    MSOMNI_LOG(error, "data.cache") << "the cache disk refused a write (" << what << ": " << std::strerror(err)
                                    << "); served uncached, " << n << " refused so far";
  }
  drop(e.id, false);
}

void shard_cache::put(const object_key& k, uint64_t offset, const void* src, size_t n) {
  if (n == 0) return;
  std::lock_guard lock(m_);
  const std::string id = id_of(k.url);
  if (!make_room(n + 64, id)) return;
  entry* e = find(k, true);
  if (!e) return;
  if (bytes_ + n + 64 > bound_ && !make_room(n + 64, e->id)) return;
  if (auto it = e->ranges.find(offset); it != e->ranges.end() && it->second.length >= n) return;
  const int fd = ::open(path(e->id, ".data").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return write_failed(*e, path(e->id, ".data"), errno);
  size_t done = 0;
  int err = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd, static_cast<const char*>(src) + done, n - done, off_t(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : ENOSPC;
      break;
    }
    done += size_t(w);
  }
  ::close(fd);
  if (err) return write_failed(*e, path(e->id, ".data"), err);
  char line[64];
  const int len = std::snprintf(line, sizeof line, "%llu %llu %016llx\n", static_cast<unsigned long long>(offset),
                                static_cast<unsigned long long>(n),
                                static_cast<unsigned long long>(XXH64(src, n, 0)));
  const int lf = ::open(path(e->id, ".ranges").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (lf < 0 || ::write(lf, line, size_t(len)) != len) {
    const int we = lf < 0 ? errno : (errno ? errno : ENOSPC);
    if (lf >= 0) ::close(lf);
    return write_failed(*e, path(e->id, ".ranges"), we);
  }
  ::close(lf);
  e->ranges[offset] = {n, XXH64(src, n, 0)};
  e->bytes += n + uint64_t(len);
  bytes_ += n + uint64_t(len);
  publish();
}

std::optional<std::string> shard_cache::read_index(const object_key& k) {
  std::lock_guard lock(m_);
  entry* e = find(k, false);
  if (!e || !e->has_index) return std::nullopt;
  std::ifstream in(path(e->id, ".idx"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return std::nullopt;
  return ss.str();
}

void shard_cache::put_index(const object_key& k, const std::string& text) {
  std::lock_guard lock(m_);
  const std::string id = id_of(k.url);
  if (!make_room(text.size() + 64, id)) return;
  entry* e = find(k, true);
  if (!e || e->has_index) return;
  if (bytes_ + text.size() > bound_ && !make_room(text.size(), e->id)) return;
  if (!write_file(path(e->id, ".idx"), text)) return write_failed(*e, path(e->id, ".idx"), ENOSPC);
  e->has_index = true;
  e->bytes += text.size();
  bytes_ += text.size();
  publish();
}

}  // namespace msomni::data
