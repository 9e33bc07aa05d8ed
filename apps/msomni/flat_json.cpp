// flat_json (see flat_json.hpp).
#include "flat_json.hpp"

namespace msomni::cli {

std::optional<std::string> json_string(const std::string& text, const std::string& key) {
  const auto k = text.find("\"" + key + "\"");
  if (k == std::string::npos) return std::nullopt;
  const auto open = text.find('"', text.find(':', k) + 1);
  const auto close = text.find('"', open + 1);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return text.substr(open + 1, close - open - 1);
}

double json_number(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  try {
    return std::stod(text.substr(at + key.size() + 3));
  } catch (...) {
    return -1;
  }
}

}  // namespace msomni::cli
