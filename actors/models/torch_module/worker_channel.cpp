// The torch worker's framed messages (see worker_channel.hpp).
#include "torch_module/worker_channel.hpp"

#include "core/json_text.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace msomni::models {

namespace {

constexpr size_t header_size = 12;
constexpr size_t max_fds = 8;

void put_le(uint8_t* out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* in, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
  return v;
}

}  // namespace

worker_channel& worker_channel::operator=(worker_channel&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void worker_channel::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void worker_channel::send(const nlohmann::json& body, std::span<const uint8_t> tail, std::span<const int> fds) {
  if (fds.size() > max_fds) throw std::invalid_argument("worker_channel: at most 8 descriptors a message");
  const std::string text = json_text(body);
  uint8_t header[header_size];
  put_le(header, text.size(), 4);
  put_le(header + 4, tail.size(), 8);
  // The header goes with the descriptors in one sendmsg (a stream socket may deliver it in
  // parts; the descriptors arrive with its first byte).
  iovec iov{header, header_size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EPIPE || errno == ECONNRESET) throw worker_gone("the torch worker closed its socket");
    throw std::system_error(errno, std::generic_category(), "torch worker: sendmsg");
  }
  write_all(header + n, header_size - static_cast<size_t>(n));
  write_all(text.data(), text.size());
  write_all(tail.data(), tail.size());
}

worker_message worker_channel::receive() {
  uint8_t header[header_size];
  read_all(header, header_size);
  const auto json_len = get_le(header, 4);
  const auto tail_len = get_le(header + 4, 8);
  std::string text(json_len, '\0');
  read_all(text.data(), text.size());
  worker_message m;
  m.body = nlohmann::json::parse(text);
  m.tail.resize(tail_len);
  read_all(m.tail.data(), m.tail.size());
  return m;
}

void worker_channel::write_all(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      if (errno == EPIPE || errno == ECONNRESET) throw worker_gone("the torch worker closed its socket");
      throw std::system_error(errno, std::generic_category(), "torch worker: send");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void worker_channel::read_all(void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd_, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != ECONNRESET) throw std::system_error(errno, std::generic_category(), "torch worker: recv");
    if (r <= 0) throw worker_gone("the torch worker closed its socket");
    p += r;
    n -= static_cast<size_t>(r);
  }
}

}  // namespace msomni::models
