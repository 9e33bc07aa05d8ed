// Crash-safe file primitives (see durable_io.hpp). Errors carry the path, the call and errno.
#include "durable_io.hpp"

#include "checkpoint_error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace msomni::ckpt {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_errno(const std::string& call, const fs::path& p, int err) {
  throw checkpoint_error(call + " " + p.string() + ": " + std::strerror(err), err);
}

// Writes are split so that a kill point can land inside a file, not only between files.
constexpr size_t write_chunk_bytes = 1 << 20;
constexpr uint64_t writeback_kick_bytes = 8 << 20;

}  // namespace

void fault_point(io_fault_plan* faults) {
  if (!faults) return;
  const int64_t done = faults->ops_done.fetch_add(1);
  const int64_t kill_at = faults->ops_until_kill.load();
  if (kill_at >= 0 && done >= kill_at) ::kill(::getpid(), SIGKILL);
}

durable_file::durable_file(fs::path final_path, fs::path tmp_path, io_fault_plan* faults)
    : final_path_(std::move(final_path)), tmp_path_(std::move(tmp_path)), faults_(faults) {
  fault_point(faults_);
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_errno("open", tmp_path_, errno);
}

durable_file::~durable_file() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

void durable_file::write(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    size_t n = std::min(size, write_chunk_bytes);
    fault_point(faults_);
    if (faults_) {
      const int64_t budget = faults_->bytes_until_fail.load();
      if (budget >= 0) {
        if (static_cast<int64_t>(n) > budget) fail_errno("write", tmp_path_, faults_->fail_errno);
        faults_->bytes_until_fail.store(budget - static_cast<int64_t>(n));
      }
    }
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail_errno("write", tmp_path_, errno);
    }
    p += w;
    size -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
    // Start writeback of what is complete so far: the disk then works while we compress
    // the next entry, and the final fsync has little left to flush. Advisory only.
    if (written_ - kicked_ >= writeback_kick_bytes) {
      ::sync_file_range(fd_, static_cast<off_t>(kicked_), static_cast<off_t>(written_ - kicked_),
                        SYNC_FILE_RANGE_WRITE);
      kicked_ = written_;
    }
  }
}

void durable_file::commit() {
  fault_point(faults_);
  if (::fsync(fd_) != 0) fail_errno("fsync", tmp_path_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_errno("close", tmp_path_, errno);
  durable_rename(tmp_path_, final_path_, faults_);
  committed_ = true;
}

void fsync_dir(const fs::path& dir, io_fault_plan* faults) {
  fault_point(faults);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail_errno("fsync directory", dir, err);
}

void durable_rename(const fs::path& from, const fs::path& to, io_fault_plan* faults) {
  fault_point(faults);
  if (::rename(from.c_str(), to.c_str()) != 0)
    fail_errno("rename to " + to.string() + " from", from, errno);
  fsync_dir(to.has_parent_path() ? to.parent_path() : std::filesystem::path("."), faults);
}

void make_dir(const fs::path& dir, io_fault_plan* faults) {
  fault_point(faults);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail_errno("mkdir", dir, errno);
}

void remove_tree(const fs::path& p, io_fault_plan* faults) {
  fault_point(faults);
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) throw checkpoint_error("remove " + p.string() + ": " + ec.message(), ec.value());
}

void write_file_atomically(const fs::path& final_path, std::string_view content,
                           const std::string& tmp_name, io_fault_plan* faults) {
  durable_file f(final_path, final_path.parent_path() / tmp_name, faults);
  f.write(content.data(), content.size());
  f.commit();
}

std::vector<uint8_t> read_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("open", p, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail_errno("fstat", p, err);
  }
  std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int err = r < 0 ? errno : EIO;
      ::close(fd);
      fail_errno("read (short file)", p, err);
    }
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return out;
}

std::string read_text_file(const fs::path& p) {
  const auto b = read_file(p);
  return std::string(b.begin(), b.end());
}

}  // namespace msomni::ckpt
