// A torch module's state_dict in its msomni checkpoint. The parameters are the "param/<name>"
// tensors, under the module's own names; the rest of the state_dict is in two blobs:
//   "torch/buffers"        the persistent buffers (BatchNorm statistics, counters) of the rank,
//                          in their own dtypes: u64 little-endian header length, a JSON header
//                          {"buffers": [{"name", "dtype", "shape", "offset", "bytes"}]}, then the
//                          data (runtime/python/msomni_torch/module_buffers.py writes it)
//   "model/torch_aliases"  {state_dict name: parameter name} for a tied parameter's other
//                          names, as JSON (only when the module ties any)
// `msomni ckpt export` reads them so that its file loads with load_state_dict(strict=True).
// Plain parsing: no Python, no torch.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace msomni::models {

inline constexpr const char* torch_buffers_blob = "torch/buffers";
inline constexpr const char* torch_aliases_blob = "model/torch_aliases";

// One state_dict entry as raw little-endian bytes with its safetensors dtype.
struct state_dict_entry {
  std::string name;
  std::string dtype;  // F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Bytes per element of a safetensors dtype; 0 for one not listed above.
size_t dtype_bytes(const std::string& dtype);

// The buffers of a "torch/buffers" blob. Throws std::invalid_argument saying what is wrong
// (truncated, not the JSON form, an entry outside the data or of a size its shape and dtype
// do not give).
std::vector<state_dict_entry> read_torch_buffers(std::span<const uint8_t> blob);

// The aliases of a "model/torch_aliases" blob. Throws std::invalid_argument when it is not a
// JSON object of strings.
std::map<std::string, std::string> read_torch_aliases(std::span<const uint8_t> blob);

}  // namespace msomni::models
