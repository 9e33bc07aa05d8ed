// safetensors writer (see safetensors.hpp).
#include "safetensors.hpp"

#include "checkpoint_error.hpp"
#include "durable_io.hpp"

#include "core/json_text.hpp"

#include <algorithm>

namespace msomni::ckpt {

namespace {

// One tensor of the file: where its bytes are, as what.
struct file_tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  uint64_t bytes = 0;
  size_t element = 4;
};

size_t element_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

}  // namespace

export_summary export_safetensors(const rank_state& state, const std::string& prefix,
                                  const std::filesystem::path& out,
                                  const std::map<std::string, std::string>& metadata,
                                  const std::vector<raw_tensor>& more) {
  std::vector<file_tensor> picked;
  for (const auto& t : state.tensors) {
    if (!t.name.starts_with(prefix) || t.name.size() == prefix.size()) continue;
    picked.push_back({t.name.substr(prefix.size()), "F32", t.shape, t.values.data(), t.values.size() * sizeof(float), 4});
  }
  if (picked.empty())
    throw checkpoint_error("export: no tensor named '" + prefix + "...' to export to " +
                           out.string());
  for (const auto& t : more) {
    const size_t element = element_bytes(t.dtype);
    if (element == 0) throw checkpoint_error("export: tensor '" + t.name + "' has dtype " + t.dtype + ", not a safetensors one");
    picked.push_back({t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size(), element});
  }
  if (!more.empty())
    std::stable_sort(picked.begin(), picked.end(),
                     [](const file_tensor& a, const file_tensor& b) { return a.element > b.element; });
  export_summary sum;
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!metadata.empty()) doc["__metadata__"] = metadata;
  for (const auto& t : picked) {
    doc[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {sum.data_bytes, sum.data_bytes + t.bytes}}};
    sum.data_bytes += t.bytes;
  }
  std::string header = json_text(doc);
  while (header.size() % 8 != 0) header += ' ';
  const uint64_t header_len = header.size();
  const std::string tmp = ".tmp-" + out.filename().string();
  durable_file f(out, out.parent_path() / tmp, nullptr);
  f.write(&header_len, sizeof header_len);
  f.write(header.data(), header.size());
  for (const auto& t : picked) f.write(t.data, t.bytes);
  f.commit();
  sum.tensors = picked.size();
  return sum;
}

}  // namespace msomni::ckpt
