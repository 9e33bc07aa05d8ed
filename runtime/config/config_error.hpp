// A configuration problem, located as FILE:LINE:COL and named by its key path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::config {

struct config_error {
  std::string file;    // the TOML path, or "--set[N]" for a command-line override
  uint32_t line = 0;
  uint32_t column = 0;
  std::string key;     // dotted key path, e.g. "training.global_batch"
  std::string reason;

  // "FILE:LINE:COL: key.path: reason"
  std::string to_string() const;
};

// Thrown by load(): carries every problem found, not just the first.
class config_errors : public std::runtime_error {
 public:
  explicit config_errors(std::vector<config_error> errors);
  const std::vector<config_error>& errors() const noexcept { return errors_; }

 private:
  std::vector<config_error> errors_;
};

}  // namespace msomni::config
