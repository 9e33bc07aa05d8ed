// A configuration problem, located as FILE:LINE:COL and named by its key path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::config {

struct config_error {
  std::string file;    // the TOML path, or "--set[N]" for a command-line override
  uint32_t line = 0;
  uint32_t column = 0;
  std::string key;     // dotted key path, e.g. "training.global_batch"
  std::string reason;

  // "FILE:LINE:COL: key.path: reason", each part through escape_for_terminal().
  std::string to_string() const;
};

// `text` safe to print on a terminal: control characters as \xNN (\n, \r, \t by name), bytes
// that are not UTF-8 as \xNN, and C1 controls, bidirectional overrides and isolates, and
// line/paragraph separators as \uNNNN. A config key or value can then neither move the
// cursor, recolour the screen nor reorder what the reader sees.
std::string escape_for_terminal(std::string_view text);

// Thrown by load(): carries every problem found, not just the first.
class config_errors : public std::runtime_error {
 public:
  explicit config_errors(std::vector<config_error> errors);
  const std::vector<config_error>& errors() const noexcept { return errors_; }

 private:
  std::vector<config_error> errors_;
};

}  // namespace msomni::config
