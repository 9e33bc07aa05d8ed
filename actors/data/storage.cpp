// Local-file storage: directory listing of *.tar shards and pread-based shard access.
#include "storage.hpp"

#include "remote_storage.hpp"

#include "core/shard_pattern.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace msomni::data {
namespace {

namespace fs = std::filesystem;

class local_file final : public byte_source {
 public:
  local_file(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~local_file() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  size_t read_at(uint64_t offset, void* dst, size_t n) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, static_cast<char*>(dst) + done, n - done, off_t(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;  // end of file or an I/O error: the caller sees a short read
      done += size_t(r);
    }
    return done;
  }

 private:
  int fd_;
  uint64_t size_;
};

class local_storage final : public storage {
 public:
  std::vector<std::string> list_shards(const std::string& uri) const override {
    std::string path = uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri;
    std::vector<std::string> out;
    std::error_code ec;
    // A path that exists is taken as written, even when its name holds a pattern character.
    if (!fs::exists(path, ec) && shard_pattern::is_pattern(path)) return shard_pattern::match_files(path);
    if (fs::is_directory(path, ec)) {
      for (const auto& e : fs::directory_iterator(path, ec))
        if (e.is_regular_file() && e.path().extension() == ".tar") out.push_back(e.path().string());
    } else if (fs::is_regular_file(path, ec)) {
      out.push_back(path);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<byte_source> open(const std::string& path) const override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return nullptr;
    }
    return std::make_unique<local_file>(fd, uint64_t(st.st_size));
  }
};

}  // namespace

std::shared_ptr<storage> make_local_storage() { return make_routing_storage(std::make_shared<local_storage>()); }

size_t memory_source::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset >= bytes_.size()) return 0;
  const size_t k = std::min<uint64_t>(n, bytes_.size() - offset);
  std::memcpy(dst, bytes_.data() + offset, k);
  return k;
}

}  // namespace msomni::data
