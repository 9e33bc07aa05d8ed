// host_identity (see host_identity.hpp).
#include "collectives/host_identity.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

namespace msomni::transport {

host_identity this_process_identity(int page_fd, uint64_t page_token, uint64_t token_address) {
  host_identity id;
  id.page_token = page_token;
  id.token_address = token_address;
  id.uid = static_cast<uint32_t>(::getuid());
  id.pid = static_cast<int32_t>(::getpid());
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  struct stat ns {};
  if (!std::getline(in, boot) || boot.empty() || boot.size() >= id.boot_id.size() ||
      ::stat("/proc/self/ns/pid", &ns) != 0)
    return id;  // page_fd stays -1: no shortcut
  std::memcpy(id.boot_id.data(), boot.data(), boot.size());
  id.pid_namespace = static_cast<uint64_t>(ns.st_ino);
  id.page_fd = page_fd;
  return id;
}

bool share_one_host(std::span<const host_identity> members) {
  if (members.empty()) return false;
  const auto& first = members.front();
  return std::all_of(members.begin(), members.end(), [&](const host_identity& m) {
    return m.magic == host_identity::current_magic && m.page_fd >= 0 && m.pid > 0 && m.boot_id[0] != '\0' &&
           m.boot_id.back() == '\0' && m.boot_id == first.boot_id && m.pid_namespace == first.pid_namespace &&
           m.uid == first.uid;
  });
}

}  // namespace msomni::transport
