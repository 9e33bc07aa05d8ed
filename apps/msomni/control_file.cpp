// control_file (see control_file.hpp).
#include "control_file.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace msomni::cli {

std::optional<control_file> read_control_file(const std::string& run_dir) {
  std::ifstream in(std::filesystem::path(run_dir) / "control.json");
  if (!in) return std::nullopt;
  const auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;  // also a file that is not JSON (parse gives "discarded")
  const auto address = doc.find("address");
  const auto token = doc.find("token");
  if (address == doc.end() || !address->is_string() || token == doc.end() || !token->is_string()) return std::nullopt;
  return control_file{address->get<std::string>(), token->get<std::string>()};
}

}  // namespace msomni::cli
