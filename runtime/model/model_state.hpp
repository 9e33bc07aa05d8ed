// A model's full training state as named blobs, the form checkpoints store: float tensors
// (weights, optimizer moments) and raw byte blobs (step counters, RNG states, config).
// Names are stable across runs; a checkpoint shard writes one frame per entry.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace msomni::model {

struct state_tensor {
  std::string name;             // e.g. "param/layer0.w_qkv", "adam_m/layer0.w_qkv"
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct state_blob {
  std::string name;             // e.g. "optimizer/step"
  std::vector<uint8_t> bytes;
};

struct model_state {
  std::vector<state_tensor> tensors;
  std::vector<state_blob> blobs;

  const state_tensor* find_tensor(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  const state_blob* find_blob(const std::string& name) const {
    for (const auto& b : blobs)
      if (b.name == name) return &b;
    return nullptr;
  }
  void put_int64(const std::string& name, int64_t value) {
    state_blob b{name, std::vector<uint8_t>(sizeof value)};
    std::memcpy(b.bytes.data(), &value, sizeof value);  // little-endian on every target we run
    blobs.push_back(std::move(b));
  }
  // False when the blob is absent or has the wrong size.
  bool get_int64(const std::string& name, int64_t& value) const {
    const state_blob* b = find_blob(name);
    if (!b || b->bytes.size() != sizeof value) return false;
    std::memcpy(&value, b->bytes.data(), sizeof value);
    return true;
  }
};

}  // namespace msomni::model
