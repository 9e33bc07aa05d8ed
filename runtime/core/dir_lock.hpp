// One writer per directory: an exclusive lock (flock on DIR/.msomni.lock) held for as long as
// the object lives. The lock file records who holds it (pid, host, start time) so a refused
// second writer can say whose lock it met. The kernel drops a flock when its holder dies, so
// a lock left by a dead process is simply taken over; its old holder is reported as such.
// The descriptor is close-on-exec: a child process never holds the lock.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace msomni {

struct lock_holder {
  long pid = 0;
  std::string host;
  long long started_ms = 0;  // Unix time
  std::string describe() const;  // "pid 123 on host h since <time>"
};

class dir_lock {
 public:
  // Takes the lock on `dir` (which must exist) or returns nullopt with `why` filled in: the
  // holder when another process has it, or the failing call with its errno text.
  static std::optional<dir_lock> acquire(const std::filesystem::path& dir, std::string& why);

  // Who holds `dir`'s lock now, without taking it; nullopt when nobody does.
  static std::optional<lock_holder> holder_of(const std::filesystem::path& dir);

  dir_lock(dir_lock&& other) noexcept;
  dir_lock& operator=(dir_lock&& other) noexcept;
  dir_lock(const dir_lock&) = delete;
  dir_lock& operator=(const dir_lock&) = delete;
  ~dir_lock();

  // The previous holder recorded in the file when it had died without releasing (the lock
  // was taken over); nullopt for a fresh or cleanly released lock.
  const std::optional<lock_holder>& taken_over_from() const noexcept { return taken_over_from_; }

 private:
  explicit dir_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::optional<lock_holder> taken_over_from_;
};

inline constexpr const char* dir_lock_file = ".msomni.lock";

}  // namespace msomni
