// Shared memory for the torch worker (see shared_region.hpp).
#include "torch_module/shared_region.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace msomni::models {

shared_region::shared_region(const std::string& name, size_t bytes) {
  // A mapping of 0 bytes is not allowed; an empty region still has a page.
  size_ = bytes == 0 ? 1 : bytes;
  fd_ = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create " + name);
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    const int e = errno;
    release();
    throw std::system_error(e, std::generic_category(), "ftruncate " + name);
  }
  data_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (data_ == MAP_FAILED) {
    const int e = errno;
    data_ = nullptr;
    release();
    throw std::system_error(e, std::generic_category(), "mmap " + name);
  }
}

shared_region::shared_region(shared_region&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

shared_region& shared_region::operator=(shared_region&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = std::exchange(o.fd_, -1);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

shared_region::~shared_region() { release(); }

void shared_region::release() {
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  fd_ = -1;
  size_ = 0;
}

}  // namespace msomni::models
