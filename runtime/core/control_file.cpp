// control_file (see control_file.hpp).
#include "core/control_file.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <iterator>

namespace msomni {

namespace fs = std::filesystem;

namespace {

// The whole of `file` parsed as JSON ("discarded" when it cannot be read or parsed).
nlohmann::json json_in(const fs::path& file, std::string* text_out = nullptr) {
  std::ifstream in(file);
  if (!in) return nlohmann::json(nlohmann::json::value_t::discarded);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return nlohmann::json(nlohmann::json::value_t::discarded);
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (text_out) *text_out = std::move(text);
  return doc;
}

}  // namespace

std::optional<control_file> read_control_file(const fs::path& file) {
  const auto doc = json_in(file);
  if (!doc.is_object()) return std::nullopt;  // also a file that is not JSON (parse gives "discarded")
  const auto address = doc.find("address");
  const auto token = doc.find("token");
  if (address == doc.end() || !address->is_string() || token == doc.end() || !token->is_string()) return std::nullopt;
  const auto number = [&doc](const char* key) {
    const auto it = doc.find(key);
    return it != doc.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  const auto text = [&doc](const char* key) {
    const auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return control_file{address->get<std::string>(), token->get<std::string>(), number("pid"), text("store"), text("job"),
                      text("metrics_address"), number("follow_limit_s")};
}

bool control_process_gone(const control_file& file) {
  return file.pid > 0 && ::kill(static_cast<pid_t>(file.pid), 0) != 0 && errno == ESRCH;
}

std::optional<std::string> ended_run_summary(const fs::path& run_dir, const control_file& file) {
  std::error_code ec, ec2;
  const auto summary_at = fs::last_write_time(run_dir / "summary.json", ec);
  if (ec) return std::nullopt;
  const auto control_at = fs::last_write_time(run_dir / "control.json", ec2);
  if (!ec2 && summary_at < control_at && !control_process_gone(file)) return std::nullopt;
  std::string text;
  if (!json_in(run_dir / "summary.json", &text).is_object()) return std::nullopt;
  return text;
}

bool run_ended_under_its_leader(const fs::path& run_dir) {
  std::error_code ec, ec2;
  const auto summary_at = fs::last_write_time(run_dir / "summary.json", ec);
  const auto control_at = fs::last_write_time(run_dir / "control.json", ec2);
  if (ec || ec2 || summary_at < control_at) return false;
  const auto doc = json_in(run_dir / "summary.json");
  if (!doc.is_object()) return false;
  const auto state = doc.find("state");
  return state != doc.end() && state->is_string() && state->get<std::string>() != "deposed";
}

}  // namespace msomni
