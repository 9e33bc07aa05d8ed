// The one exception type of the checkpoint code. Messages name the path (and entry) and the
// reason, e.g. expected vs actual checksum; `sys_errno` carries errno for I/O failures so a
// caller can tell a full disk (ENOSPC/EFBIG) from corruption.
#pragma once

#include <stdexcept>
#include <string>

namespace msomni::ckpt {

class checkpoint_error : public std::runtime_error {
 public:
  explicit checkpoint_error(const std::string& what, int sys_errno = 0)
      : std::runtime_error(what), sys_errno_(sys_errno) {}
  int sys_errno() const noexcept { return sys_errno_; }

 private:
  int sys_errno_;
};

}  // namespace msomni::ckpt
