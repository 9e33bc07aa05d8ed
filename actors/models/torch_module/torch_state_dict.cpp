// A torch module's state_dict blobs (see torch_state_dict.hpp).
#include "torch_module/torch_state_dict.hpp"

#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace msomni::models {

size_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {{"F64", 8}, {"I64", 8}, {"F32", 4}, {"I32", 4}, {"F16", 2},
                                                      {"BF16", 2}, {"I16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::vector<state_dict_entry> read_torch_buffers(std::span<const uint8_t> blob) {
  auto fail = [](const std::string& why) { throw std::invalid_argument(std::string(torch_buffers_blob) + ": " + why); };
  if (blob.size() < 8) fail("truncated (" + std::to_string(blob.size()) + " bytes)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, blob.data(), 8);
  if (header_len > blob.size() - 8) fail("a header of " + std::to_string(header_len) + " bytes in a blob of " + std::to_string(blob.size()));
  const auto header = nlohmann::json::parse(blob.begin() + 8, blob.begin() + 8 + static_cast<std::ptrdiff_t>(header_len),
                                            nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("buffers") || !header.at("buffers").is_array())
    fail("the header is not {\"buffers\": [...]}");
  const auto data = blob.subspan(8 + header_len);
  std::vector<state_dict_entry> out;
  try {
    for (const auto& e : header.at("buffers")) {
      state_dict_entry entry{e.at("name").get<std::string>(), e.at("dtype").get<std::string>(),
                             e.at("shape").get<std::vector<int64_t>>(), {}};
      const auto offset = e.at("offset").get<uint64_t>(), bytes = e.at("bytes").get<uint64_t>();
      uint64_t count = 1;
      for (const auto d : entry.shape) count *= static_cast<uint64_t>(d < 0 ? 0 : d);
      const size_t element = dtype_bytes(entry.dtype);
      if (element == 0) fail("buffer '" + entry.name + "' has dtype " + entry.dtype + ", which safetensors does not name");
      if (bytes != count * element)
        fail("buffer '" + entry.name + "' has " + std::to_string(bytes) + " bytes; its shape and dtype make " +
             std::to_string(count * element));
      if (offset > data.size() || bytes > data.size() - offset) fail("buffer '" + entry.name + "' lies past the data");
      entry.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(offset),
                         data.begin() + static_cast<std::ptrdiff_t>(offset + bytes));
      out.push_back(std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("an entry lacks a field or has the wrong type: ") + e.what());
  }
  return out;
}

std::map<std::string, std::string> read_torch_aliases(std::span<const uint8_t> blob) {
  const auto j = nlohmann::json::parse(blob.begin(), blob.end(), nullptr, false);
  std::map<std::string, std::string> out;
  if (!j.is_discarded() && j.is_object()) {
    for (const auto& [alias, name] : j.items()) {
      if (!name.is_string()) break;
      out[alias] = name.get<std::string>();
    }
    if (out.size() == j.size()) return out;
  }
  throw std::invalid_argument(std::string(torch_aliases_blob) + ": not a JSON object of parameter names");
}

}  // namespace msomni::models
