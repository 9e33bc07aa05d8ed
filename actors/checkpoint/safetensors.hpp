// Export of model weights as a safetensors file, the format other training stacks read:
// u64 little-endian header length, a JSON header mapping each tensor name to
// {"dtype":"F32","shape":[...],"data_offsets":[begin,end]} (offsets into the data that
// follows), padded with spaces to a multiple of 8, then the raw little-endian data. The
// header lists "__metadata__" first, then the tensors in the checkpoint's order.
#pragma once

#include "rank_state.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace msomni::ckpt {

struct export_summary {
  size_t tensors = 0;
  uint64_t data_bytes = 0;
};

// A tensor to write besides the checkpoint's float ones: raw little-endian bytes and their
// safetensors dtype (F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL), e.g. a torch
// module's integer buffers.
struct raw_tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Tensors whose names start with `prefix` are written, named without the prefix, then `more`;
// metadata goes into "__metadata__". With `more`, the tensors are ordered by element size,
// widest first (stable), so every tensor's data starts at a multiple of its element size.
// Written to a temporary name and renamed, like everything else.
export_summary export_safetensors(const rank_state& state, const std::string& prefix,
                                  const std::filesystem::path& out,
                                  const std::map<std::string, std::string>& metadata = {},
                                  const std::vector<raw_tensor>& more = {});

}  // namespace msomni::ckpt
