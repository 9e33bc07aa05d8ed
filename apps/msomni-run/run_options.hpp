// Command line of msomni-run: what it accepts and how it is parsed.
#pragma once

#include <iosfwd>
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
};

// Parses argv into `o`. nullopt: run with it; otherwise exit with that status (0 after
// --help or --version, 2 for a bad command line), its text already written to out or err.
std::optional<int> parse_run_options(int argc, const char* const* argv, run_options& o, std::ostream& out,
                                     std::ostream& err);

}  // namespace msomni::apps
