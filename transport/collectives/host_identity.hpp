// Which members of a communicator share one host (and one process namespace), so that they
// may read each other's memory directly (Linux cross-memory attach) instead of sending it
// through UCX. Every member sends its record to every other; each then decides with the same
// pure rule over the same records, so all take the same path.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace msomni::transport {

struct host_identity {
  static constexpr uint64_t current_magic = 0x6d736f6d48535432ull;  // "msomHST2"
  uint64_t magic = current_magic;
  std::array<char, 40> boot_id{};  // /proc/sys/kernel/random/boot_id: one per booted kernel
  uint64_t pid_namespace = 0;      // inode of /proc/self/ns/pid
  uint64_t page_token = 0;         // random; written in the control page, proves the mapping
  uint64_t token_address = 0;      // where that token lies in this process: read across
                                   // processes, it proves cross-memory attach is allowed
  uint32_t uid = 0;
  int32_t pid = 0;
  int32_t page_fd = -1;  // the control page's descriptor; -1: this member offers no shortcut
  uint32_t reserved = 0;
};
static_assert(sizeof(host_identity) == 88);  // sent as raw bytes: no padding

// This process's record, with its control page (fd, token, the token's address); page_fd -1
// when the host's identity cannot be read (then the record never matches).
host_identity this_process_identity(int page_fd, uint64_t page_token, uint64_t token_address);

// True when every record is well formed, offers its page, and all name one boot of one
// kernel, one pid namespace and one user. Pure.
bool share_one_host(std::span<const host_identity> members);

}  // namespace msomni::transport
