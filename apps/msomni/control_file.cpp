// control_file (see control_file.hpp).
#include "control_file.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace msomni::cli {

std::optional<control_file> read_control_file(const std::string& run_dir) {
  std::ifstream in(std::filesystem::path(run_dir) / "control.json");
  if (!in) return std::nullopt;
  const auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;  // also a file that is not JSON (parse gives "discarded")
  const auto address = doc.find("address");
  const auto token = doc.find("token");
  if (address == doc.end() || !address->is_string() || token == doc.end() || !token->is_string()) return std::nullopt;
  const auto pid = doc.find("pid");
  const auto text = [&doc](const char* key) {
    const auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return control_file{address->get<std::string>(), token->get<std::string>(),
                      pid != doc.end() && pid->is_number_integer() ? pid->get<int64_t>() : 0, text("store"), text("job")};
}

bool control_process_gone(const control_file& file) {
  return file.pid > 0 && ::kill(static_cast<pid_t>(file.pid), 0) != 0 && errno == ESRCH;
}

std::optional<std::string> ended_run_summary(const std::string& run_dir, const control_file& file) {
  namespace fs = std::filesystem;
  const fs::path dir(run_dir);
  std::error_code ec, ec2;
  const auto summary_at = fs::last_write_time(dir / "summary.json", ec);
  if (ec) return std::nullopt;
  const auto control_at = fs::last_write_time(dir / "control.json", ec2);
  if (!ec2 && summary_at < control_at && !control_process_gone(file)) return std::nullopt;
  std::ifstream in(dir / "summary.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return std::nullopt;
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  return text;
}

}  // namespace msomni::cli
