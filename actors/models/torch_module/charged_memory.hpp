// Memory of the torch model's own (its shared buffers, AdamW's moments) counted in a memory
// account while it exists, as ops::allocate counts a native model's: the rank's samples, its
// journal and its budget see a torch rank's memory like any other's. Move-only; the bytes
// leave the account when it goes.
#pragma once

#include "memory/memory_account.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace msomni::models {

class charged_memory {
 public:
  charged_memory() = default;
  // Counts `bytes` under `key` (the memory's address). Throws kernels::out_of_memory when they
  // would take the account past its budget, counting nothing.
  charged_memory(std::shared_ptr<kernels::memory_account> account, const void* key, uint64_t bytes,
                 const std::string& what)
      : account_(std::move(account)), key_(const_cast<void*>(key)) {
    account_->charge(bytes, what);
    account_->opened(key_, bytes);
  }
  charged_memory(charged_memory&& o) noexcept
      : account_(std::exchange(o.account_, nullptr)), key_(std::exchange(o.key_, nullptr)) {}
  charged_memory& operator=(charged_memory&& o) noexcept {
    if (this != &o) {
      release();
      account_ = std::exchange(o.account_, nullptr);
      key_ = std::exchange(o.key_, nullptr);
    }
    return *this;
  }
  charged_memory(const charged_memory&) = delete;
  charged_memory& operator=(const charged_memory&) = delete;
  ~charged_memory() { release(); }

 private:
  void release() noexcept {
    if (account_) account_->closed(key_);
    account_ = nullptr;
  }
  std::shared_ptr<kernels::memory_account> account_;
  void* key_ = nullptr;
};

}  // namespace msomni::models
