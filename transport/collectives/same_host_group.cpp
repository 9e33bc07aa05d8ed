// same_host_group (see same_host_group.hpp).
#include "collectives/same_host_group.hpp"

#include "collectives/communicator.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

namespace msomni::transport {

struct same_host_group::page {
  uint64_t token = 0;
  std::atomic<uint64_t> stages[3];  // the last operation that reached each stage
  std::atomic<uint64_t> address[2];  // by the step's parity
  std::atomic<uint64_t> bytes[2];
  struct shared_area {
    std::atomic<int64_t> fd{-1};
    std::atomic<uint64_t> capacity{0};
    std::atomic<uint64_t> generation{0};  // published last
  } areas[area_count];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the page is shared between processes");

namespace {

constexpr size_t page_bytes = 4096;
static_assert(sizeof(same_host_group::page) <= page_bytes);

[[noreturn]] void fail(const std::string& why) { throw collective_error("same-host collective: " + why); }

std::string errno_text(int e) { return std::strerror(e); }

struct shared_mapping {
  int fd = -1;
  void* base = nullptr;
};

// A new anonymous memfd of `bytes`, mapped read-write. Throws collective_error (`what` names it).
shared_mapping create_shared(const char* name, size_t bytes, const std::string& what) {
  shared_mapping m;
  m.fd = ::memfd_create(name, MFD_CLOEXEC);
  if (m.fd < 0) fail("memfd_create: " + errno_text(errno));
  void* p = MAP_FAILED;
  if (::ftruncate(m.fd, static_cast<off_t>(bytes)) == 0)
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(m.fd);
    fail("cannot map " + what + ": " + errno_text(e));
  }
  m.base = p;
  return m;
}

// Another process's memfd `fd_number` (`what`, for messages), mapped read-only through
// /proc (allowed for a process of the same user that it may inspect). Null and `why` set
// when not.
const void* map_peer_fd(pid_t pid, int64_t fd_number, size_t bytes, const std::string& what, std::string& why) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd_number);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = "cannot open " + what + " (" + path + "): " + errno_text(errno);
    return nullptr;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    why = "cannot map " + what + ": " + errno_text(e);
    return nullptr;
  }
  return p;
}

// Copies `bytes` at `from` in process `pid` to `to` (process_vm_readv, partial reads
// continued). 0, or the errno that stopped it.
int read_peer(pid_t pid, uintptr_t from, void* to, size_t bytes) {
  auto* dst = static_cast<std::byte*>(to);
  while (bytes > 0) {
    iovec local{dst, bytes};
    iovec remote{reinterpret_cast<void*>(from), bytes};
    const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      const int e = n < 0 ? errno : EFAULT;
      if (e == EINTR) continue;
      return e;
    }
    dst += n;
    from += static_cast<uintptr_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

same_host_group::same_host_group() {
  const auto m = create_shared("msomni-collective", page_bytes, "the control page");
  page_fd_ = m.fd;
  own_ = new (m.base) page();
  for (auto& s : own_->stages) s.store(0);
  for (int i = 0; i < 2; ++i) own_->address[i].store(0), own_->bytes[i].store(0);
  std::random_device rd;
  own_->token = (uint64_t{rd()} << 32) | rd();
}

same_host_group::~same_host_group() {
  for (auto& pr : peers_) {
    if (pr.view == own_) continue;
    if (pr.view) ::munmap(const_cast<page*>(pr.view), page_bytes);
    for (auto& r : pr.areas) unmap(r);
  }
  for (auto& r : areas_) unmap(r);
  own_->~page();
  ::munmap(own_, page_bytes);
  close_page_fd();
}

uint64_t same_host_group::shared_bytes() const {
  uint64_t total = page_bytes;
  for (const auto& r : areas_) total += r.capacity;
  return total;
}

uint64_t same_host_group::page_token() const { return own_->token; }

uint64_t same_host_group::token_address() const { return reinterpret_cast<uintptr_t>(&own_->token); }

void same_host_group::close_page_fd() {
  if (page_fd_ >= 0) ::close(page_fd_);
  page_fd_ = -1;
}

std::string same_host_group::attach(std::span<const host_identity> members, int rank) {
  std::vector<peer> mapped(members.size());
  std::string why;
  for (size_t i = 0; i < members.size() && why.empty(); ++i) {
    mapped[i].pid = members[i].pid;
    if (static_cast<int>(i) == rank) {
      mapped[i].view = own_;
      continue;
    }
    mapped[i].view = static_cast<const page*>(
        map_peer_fd(members[i].pid, members[i].page_fd, page_bytes, "member " + std::to_string(i) + "'s control page", why));
    if (!mapped[i].view) break;
    if (mapped[i].view->token != members[i].page_token) {
      why = "member " + std::to_string(i) + "'s control page has another token";
      break;
    }
    // Broadcast reads the root's buffer with process_vm_readv, which needs more than the
    // /proc descriptor did (a ptrace attach; kernel.yama.ptrace_scope above 0 refuses it
    // between sibling processes): prove it on the token.
    uint64_t seen = 0;
    if (const int e = read_peer(members[i].pid, members[i].token_address, &seen, sizeof seen); e != 0) {
      why = "cannot read member " + std::to_string(i) + "'s memory (process_vm_readv: " + errno_text(e) + ")";
      break;
    }
    if (seen != members[i].page_token) why = "member " + std::to_string(i) + "'s memory holds another token";
  }
  if (!why.empty()) {
    for (size_t i = 0; i < mapped.size(); ++i)
      if (static_cast<int>(i) != rank && mapped[i].view) ::munmap(const_cast<page*>(mapped[i].view), page_bytes);
    return why;
  }
  peers_ = std::move(mapped);
  rank_ = rank;
  return {};
}

void same_host_group::publish(uint64_t seq, const void* addr, size_t bytes) {
  own_->address[seq % 2].store(reinterpret_cast<uintptr_t>(addr), std::memory_order_relaxed);
  own_->bytes[seq % 2].store(bytes, std::memory_order_relaxed);
  own_->stages[0].store(seq, std::memory_order_release);
}

void same_host_group::mark(stage s, uint64_t seq) {
  own_->stages[static_cast<size_t>(s)].store(seq, std::memory_order_release);
}

void same_host_group::unmap(region& r) {
  if (r.base) ::munmap(r.base, r.capacity);
  if (r.fd >= 0) ::close(r.fd);
  r = {};
}

std::byte* same_host_group::own_area(area a, size_t bytes) {
  auto& mine = areas_[size_t(a)];
  if (bytes <= mine.capacity && mine.base) return mine.base;
  constexpr size_t grain = size_t{2} << 20;
  const size_t capacity = std::max(grain, (bytes + grain - 1) / grain * grain);
  const auto m = create_shared("msomni-collective-area", capacity,
                               "a shared area of " + std::to_string(capacity) + " bytes");
  region grown;
  grown.fd = m.fd;
  grown.base = static_cast<std::byte*>(m.base);
  grown.capacity = capacity;
  grown.generation = mine.generation + 1;
  // The others map the new one when they next look; nobody reads the old one now.
  unmap(mine);
  mine = grown;
  auto& shared = own_->areas[size_t(a)];
  shared.fd.store(mine.fd, std::memory_order_relaxed);
  shared.capacity.store(mine.capacity, std::memory_order_relaxed);
  shared.generation.store(mine.generation, std::memory_order_release);
  return mine.base;
}

const std::byte* same_host_group::area_of(int member, area a) {
  auto& pr = peers_[size_t(member)];
  auto& mapped = pr.areas[size_t(a)];
  const auto& shared = pr.view->areas[size_t(a)];
  const uint64_t generation = shared.generation.load(std::memory_order_acquire);
  if (generation == 0) fail("member " + std::to_string(member) + " has not shared that area");
  if (generation != mapped.generation) {
    unmap(mapped);
    const size_t capacity = shared.capacity.load(std::memory_order_relaxed);
    std::string why;
    const void* p = map_peer_fd(pr.pid, shared.fd.load(std::memory_order_relaxed), capacity,
                                "member " + std::to_string(member) + "'s shared area", why);
    if (!p) fail(why);
    mapped = {-1, static_cast<std::byte*>(const_cast<void*>(p)), capacity, generation};
  }
  return mapped.base;
}

uintptr_t same_host_group::address_of(int member, uint64_t step) const {
  return peers_[size_t(member)].view->address[step % 2].load(std::memory_order_acquire);
}

uint64_t same_host_group::bytes_of(int member, uint64_t step) const {
  return peers_[size_t(member)].view->bytes[step % 2].load(std::memory_order_acquire);
}

void same_host_group::wait(int member, stage s, uint64_t seq, std::chrono::steady_clock::time_point deadline,
                           const std::function<std::string()>& abort_reason) const {
  const auto& flag = peers_[size_t(member)].view->stages[static_cast<size_t>(s)];
  // Busy while a peer is a few microseconds behind; yielding so that, with more processes
  // than cores, the peer runs; sleeping in short steps once it is far behind (still
  // computing), so a waiting rank does not take the core its peer computes on.
  constexpr int spins = 64;
  constexpr auto yield_for = std::chrono::milliseconds(2);
  constexpr auto nap = std::chrono::microseconds(50);
  std::chrono::steady_clock::time_point started{};
  bool napping = false;
  for (uint64_t i = 0;; ++i) {
    if (flag.load(std::memory_order_acquire) >= seq) return;
    if (i < spins) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    if (napping || ((i - spins) & 63) == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (i == spins) started = now;
      if (auto why = abort_reason(); !why.empty()) fail(why);
      const pid_t pid = peers_[size_t(member)].pid;
      if (::kill(pid, 0) != 0 && errno == ESRCH)
        fail("member " + std::to_string(member) + " (pid " + std::to_string(pid) + ") is gone");
      if (now >= deadline) fail("timed out waiting for member " + std::to_string(member));
      napping = now - started > yield_for;
    }
    if (napping)
      std::this_thread::sleep_for(nap);
    else
      ::sched_yield();
  }
}

void same_host_group::read(int member, uintptr_t from, void* to, size_t bytes) const {
  if (const int e = read_peer(peers_[size_t(member)].pid, from, to, bytes); e != 0)
    fail("reading member " + std::to_string(member) + "'s buffer: " + errno_text(e));
}

}  // namespace msomni::transport
