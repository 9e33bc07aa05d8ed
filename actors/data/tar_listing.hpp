// What a tar header walk finds: each member's name, where its data starts and its size, and
// the damage met on the way. Plain values, so pure cores (tar_sample_assembler.hpp) take them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace msomni::data {

inline constexpr size_t tar_block_size = 512;

struct tar_member {
  std::string name;
  uint64_t data_offset = 0;
  uint64_t size = 0;
};

// The members of one shard, found by walking headers only (data is not read).
struct tar_listing {
  std::vector<tar_member> members;
  uint32_t bad_header_runs = 0;   // runs of blocks that were not valid headers, skipped
  bool truncated = false;         // a member's data (or a header) ran past the end
};

}  // namespace msomni::data
