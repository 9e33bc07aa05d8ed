// RUN_DIR/control.json, which msomni-run writes (mode 0600) so that local clients can reach
// its control endpoint: {"address":"HOST:PORT","token":"...","pid":N}.
#pragma once

#include <optional>
#include <string>

namespace msomni::cli {

struct control_file {
  std::string address, token;
};

// The string value of "key" in a small JSON object, or nullopt.
std::optional<std::string> json_string(const std::string& text, const std::string& key);

// nullopt when RUN_DIR/control.json cannot be read or lacks the address or the token.
std::optional<control_file> read_control_file(const std::string& run_dir);

}  // namespace msomni::cli
