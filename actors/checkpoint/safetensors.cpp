// safetensors writer (see safetensors.hpp).
#include "safetensors.hpp"

#include "checkpoint_error.hpp"
#include "durable_io.hpp"


namespace msomni::ckpt {

export_summary export_safetensors(const rank_state& state, const std::string& prefix,
                                  const std::filesystem::path& out,
                                  const std::map<std::string, std::string>& metadata) {
  export_summary sum;
  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata) {
      if (!first) header += ",";
      header += "\"" + json_escape(k) + "\":\"" + json_escape(v) + "\"";
      first = false;
    }
    header += "}";
  }
  std::vector<const tensor_entry*> picked;
  for (const auto& t : state.tensors) {
    if (!t.name.starts_with(prefix) || t.name.size() == prefix.size()) continue;
    picked.push_back(&t);
    const uint64_t bytes = t.values.size() * sizeof(float);
    header += std::string(first ? "" : ",") + "\"" + json_escape(t.name.substr(prefix.size())) +
              "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(sum.data_bytes) + "," +
              std::to_string(sum.data_bytes + bytes) + "]}";
    sum.data_bytes += bytes;
    first = false;
  }
  header += "}";
  if (picked.empty())
    throw checkpoint_error("export: no tensor named '" + prefix + "...' to export to " +
                           out.string());
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
