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

namespace msomni::ckpt {

struct export_summary {
  size_t tensors = 0;
  uint64_t data_bytes = 0;
};

// Tensors whose names start with `prefix` are written, named without the prefix; metadata
// goes into "__metadata__". Written to a temporary name and renamed, like everything else.
export_summary export_safetensors(const rank_state& state, const std::string& prefix,
                                  const std::filesystem::path& out,
                                  const std::map<std::string, std::string>& metadata = {});

}  // namespace msomni::ckpt
