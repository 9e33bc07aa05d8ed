// A block of memory shared with the torch worker: an anonymous memory file (memfd) mapped
// here, its descriptor sent to the worker, which maps the same pages. Nothing is left behind
// when either process ends (no name in /dev/shm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace msomni::models {

class shared_region {
 public:
  shared_region() = default;
  // `bytes` zeroed bytes; `name` shows in /proc/PID/maps. Throws std::system_error.
  shared_region(const std::string& name, size_t bytes);
  shared_region(shared_region&& o) noexcept;
  shared_region& operator=(shared_region&& o) noexcept;
  shared_region(const shared_region&) = delete;
  shared_region& operator=(const shared_region&) = delete;
  ~shared_region();

  int fd() const { return fd_; }
  size_t size() const { return size_; }
  std::byte* data() const { return static_cast<std::byte*>(data_); }
  template <class T>
  std::span<T> as(size_t count) const {
    return {reinterpret_cast<T*>(data_), count};
  }

 private:
  void release();
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace msomni::models
