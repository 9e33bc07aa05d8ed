// The rank's end of the socket to its torch worker (runtime/python/msomni_torch/channel.py):
// framed messages, each a JSON object, a binary tail and descriptors passed along with it
// (SCM_RIGHTS). A frame is a 12-byte header (u32 little-endian JSON length, u64 tail length),
// the JSON text and the tail; descriptors travel with the header.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace msomni::models {

struct worker_message {
  nlohmann::json body;
  std::vector<uint8_t> tail;
};

// The worker closed its end (it ended): what() says so; the caller adds why.
struct worker_gone : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class worker_channel {
 public:
  worker_channel() = default;
  explicit worker_channel(int fd) : fd_(fd) {}  // takes the descriptor
  worker_channel(worker_channel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  worker_channel& operator=(worker_channel&& o) noexcept;
  worker_channel(const worker_channel&) = delete;
  worker_channel& operator=(const worker_channel&) = delete;
  ~worker_channel() { close(); }

  // Throws worker_gone when the worker has closed its end, std::system_error on other errors.
  void send(const nlohmann::json& body, std::span<const uint8_t> tail = {}, std::span<const int> fds = {});
  worker_message receive();
  void close();
  bool open() const { return fd_ >= 0; }

 private:
  void write_all(const void* data, size_t n);
  void read_all(void* data, size_t n);
  int fd_ = -1;
};

}  // namespace msomni::models
