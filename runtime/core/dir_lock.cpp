// dir_lock (see dir_lock.hpp).
#include "core/dir_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

namespace msomni {

namespace {

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  ssize_t n = 0;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0 && text.size() < 4096) {
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return text;
}

// The file holds one line: "pid HOST STARTED_MS".
std::optional<lock_holder> parse_holder(const std::string& text) {
  std::istringstream in(text);
  lock_holder h;
  if (!(in >> h.pid >> h.host >> h.started_ms) || h.pid <= 0) return std::nullopt;
  return h;
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

std::string lock_holder::describe() const {
  std::ostringstream os;
  os << "pid " << pid << " on host " << host;
  if (started_ms > 0) {
    const auto age_s = (std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count() - started_ms) / 1000;
    os << " (holding it for " << age_s << " s)";
  }
  return os.str();
}

std::optional<dir_lock> dir_lock::acquire(const std::filesystem::path& dir, std::string& why) {
  const auto path = dir / dir_lock_file;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    why = "cannot open " + path.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const auto holder = parse_holder(read_all(fd));
    ::close(fd);
    if (err == EWOULDBLOCK)
      why = path.parent_path().string() + " is in use by another msomni process" +
            (holder ? ": " + holder->describe() : std::string(" (it has not recorded itself yet)"));
    else
      why = "cannot lock " + path.string() + ": " + std::strerror(err);
    return std::nullopt;
  }
  dir_lock lock(fd);
  if (auto previous = parse_holder(read_all(fd))) lock.taken_over_from_ = previous;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string line = std::to_string(::getpid()) + " " + this_host() + " " + std::to_string(now_ms) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd) != 0) {
    why = "cannot record the lock holder in " + path.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return lock;
}

std::optional<lock_holder> dir_lock::holder_of(const std::filesystem::path& dir) {
  const auto path = dir / dir_lock_file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::optional<lock_holder> h;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    h = parse_holder(read_all(fd));
    if (!h) h = lock_holder{};
  }
  ::close(fd);
  return h;
}

dir_lock::dir_lock(dir_lock&& other) noexcept : fd_(other.fd_), taken_over_from_(std::move(other.taken_over_from_)) {
  other.fd_ = -1;
}

dir_lock& dir_lock::operator=(dir_lock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    taken_over_from_ = std::move(other.taken_over_from_);
    other.fd_ = -1;
  }
  return *this;
}

dir_lock::~dir_lock() {
  if (fd_ < 0) return;
  // A clean release clears the record, so the next holder can tell a crash (record left
  // behind) from an orderly hand-over. Closing the descriptor releases the flock.
  if (::ftruncate(fd_, 0) == 0) ::fsync(fd_);
  ::close(fd_);
}

}  // namespace msomni
