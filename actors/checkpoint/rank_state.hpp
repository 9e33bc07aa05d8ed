// What one rank hands to the checkpoint writer: named float tensors (weights, optimizer
// moments) and named opaque blobs (RNG states, data cursors, counters). Generic on purpose:
// the checkpoint code never interprets names, so any model, optimizer or data pipeline can
// put its state here. Conventions used by reshard and export: "param/..." replicated weights
// (what export writes by default), "adam_m/..." and "adam_v/..." the replicated AdamW moments
// a job's ranks write, "optim/..." state sharded over the ranks (reshard's default, written by
// no job today), "rng/..." and "cursor/..." per-rank blobs (docs/checkpoint_format.md).
#pragma once

#include "core/rng.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace msomni::ckpt {

struct tensor_entry {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
  bool operator==(const tensor_entry&) const = default;
};

struct blob_entry {
  std::string name;
  std::vector<uint8_t> bytes;
  bool operator==(const blob_entry&) const = default;
};

struct rank_state {
  std::vector<tensor_entry> tensors;
  std::vector<blob_entry> blobs;
  bool operator==(const rank_state&) const = default;

  void put_tensor(std::string name, std::vector<int64_t> shape, std::vector<float> values) {
    tensors.push_back({std::move(name), std::move(shape), std::move(values)});
  }
  void put_blob(std::string name, std::vector<uint8_t> bytes) {
    blobs.push_back({std::move(name), std::move(bytes)});
  }
  // Fixed-width integers are stored little-endian (every target we run is little-endian).
  void put_u64(std::string name, uint64_t value) {
    std::vector<uint8_t> b(sizeof value);
    std::memcpy(b.data(), &value, sizeof value);
    put_blob(std::move(name), std::move(b));
  }
  void put_rng(std::string name, const rng_stream& r) {
    std::vector<uint8_t> b(sizeof(rng_stream::state_type));
    std::memcpy(b.data(), r.state().data(), b.size());
    put_blob(std::move(name), std::move(b));
  }

  const tensor_entry* find_tensor(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  const blob_entry* find_blob(const std::string& name) const {
    for (const auto& b : blobs)
      if (b.name == name) return &b;
    return nullptr;
  }
  // Absent or wrong-sized entries give nullopt, never a guess.
  std::optional<uint64_t> get_u64(const std::string& name) const {
    const blob_entry* b = find_blob(name);
    if (!b || b->bytes.size() != sizeof(uint64_t)) return std::nullopt;
    uint64_t v;
    std::memcpy(&v, b->bytes.data(), sizeof v);
    return v;
  }
  std::optional<rng_stream> get_rng(const std::string& name) const {
    const blob_entry* b = find_blob(name);
    rng_stream::state_type s;
    if (!b || b->bytes.size() != sizeof s) return std::nullopt;
    std::memcpy(s.data(), b->bytes.data(), sizeof s);
    return rng_stream::from_state(s);
  }
  uint64_t raw_bytes() const {
    uint64_t n = 0;
    for (const auto& t : tensors) n += t.values.size() * sizeof(float);
    for (const auto& b : blobs) n += b.bytes.size();
    return n;
  }
};

}  // namespace msomni::ckpt
