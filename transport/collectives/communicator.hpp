// Collectives behind one interface: all-reduce (sum, mean; float32) and broadcast over a
// fixed membership. Elasticity rebuilds a communicator with a new membership and a new
// epoch; frames of older epochs are recognised and dropped. A member that dies during a
// collective makes it throw collective_error instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace msomni::transport {

enum class reduce_op : uint8_t { sum, mean };

class collective_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class communicator {
 public:
  virtual ~communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual uint64_t epoch() const = 0;
  virtual const char* backend() const = 0;
  // In place; every member calls it with the same length. Throws collective_error.
  virtual void all_reduce(std::span<float> data, reduce_op op) = 0;
  // In place from `root` to every member. Throws collective_error.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
};

// Chunk i of n elements split into `parts` nearly equal parts (the first n % parts get one
// more). Pure; shared by the ring and its tests.
struct chunk_range {
  size_t offset = 0;
  size_t count = 0;
};
chunk_range chunk_of(size_t n, size_t parts, size_t i);

}  // namespace msomni::transport
