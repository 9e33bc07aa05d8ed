// safetensors writer (see safetensors.hpp).
#include "safetensors.hpp"

#include "checkpoint_error.hpp"
#include "durable_io.hpp"

#include "core/json_text.hpp"

namespace msomni::ckpt {

export_summary export_safetensors(const rank_state& state, const std::string& prefix,
                                  const std::filesystem::path& out,
                                  const std::map<std::string, std::string>& metadata) {
  export_summary sum;
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!metadata.empty()) doc["__metadata__"] = metadata;
  std::vector<const tensor_entry*> picked;
  for (const auto& t : state.tensors) {
    if (!t.name.starts_with(prefix) || t.name.size() == prefix.size()) continue;
    picked.push_back(&t);
    const uint64_t bytes = t.values.size() * sizeof(float);
    doc[t.name.substr(prefix.size())] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {sum.data_bytes, sum.data_bytes + bytes}}};
    sum.data_bytes += bytes;
  }
  if (picked.empty())
    throw checkpoint_error("export: no tensor named '" + prefix + "...' to export to " +
                           out.string());
  std::string header = json_text(doc);
  while (header.size() % 8 != 0) header += ' ';
  const uint64_t header_len = header.size();
  const std::string tmp = ".tmp-" + out.filename().string();
  durable_file f(out, out.parent_path() / tmp, nullptr);
  f.write(&header_len, sizeof header_len);
  f.write(header.data(), header.size());
  for (const auto* t : picked) f.write(t->values.data(), t->values.size() * sizeof(float));
  f.commit();
  sum.tensors = picked.size();
  return sum;
}

}  // namespace msomni::ckpt
