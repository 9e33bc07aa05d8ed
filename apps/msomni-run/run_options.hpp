// Command line of msomni-run: what it accepts and how it is parsed.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace msomni::apps {

struct run_options {
  std::string config_path;
  std::vector<std::string> overrides;  // --set key.path=value, in order
  std::string run_dir;                 // --run-dir; empty = runs/<job.name>
  std::string log_level = "info";
  bool dry_run = false;
  bool fresh = false;
  bool help = false;
  bool version = false;
};

// Parses argv; on a usage error returns nullopt and fills `error`.
std::optional<run_options> parse_run_options(int argc, const char* const* argv, std::string& error);

std::string run_usage();

}  // namespace msomni::apps
