// control_file (see control_file.hpp).
#include "control_file.hpp"

#include "flat_json.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace msomni::cli {

std::optional<control_file> read_control_file(const std::string& run_dir) {
  std::ifstream in(std::filesystem::path(run_dir) / "control.json");
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto address = json_string(text, "address");
  auto token = json_string(text, "token");
  if (!address || !token) return std::nullopt;
  return control_file{std::move(*address), std::move(*token)};
}

}  // namespace msomni::cli
