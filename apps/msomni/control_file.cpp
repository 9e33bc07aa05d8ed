// control_file (see control_file.hpp).
#include "control_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace msomni::cli {

std::optional<std::string> json_string(const std::string& text, const std::string& key) {
  const auto k = text.find("\"" + key + "\"");
  if (k == std::string::npos) return std::nullopt;
  const auto open = text.find('"', text.find(':', k) + 1);
  const auto close = text.find('"', open + 1);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return text.substr(open + 1, close - open - 1);
}

std::optional<control_file> read_control_file(const std::string& run_dir) {
  std::ifstream in(std::filesystem::path(run_dir) / "control.json");
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto address = json_string(ss.str(), "address");
  auto token = json_string(ss.str(), "token");
  if (!address || !token) return std::nullopt;
  return control_file{std::move(*address), std::move(*token)};
}

}  // namespace msomni::cli
