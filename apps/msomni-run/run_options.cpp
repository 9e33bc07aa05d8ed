// msomni-run argument parsing (see run_options.hpp).
#include "run_options.hpp"

#include "core/log.hpp"

#include <string_view>

namespace msomni::apps {

std::string run_usage() {
  return R"(usage: msomni-run CONFIG.toml [options]

Runs the training job described by CONFIG.toml.

options:
  --set KEY.PATH=VALUE  override one config key (repeatable); VALUE is a TOML literal,
                        a bare word is taken as a string; array tables are addressed as
                        data.sources[0].weight. Checked like the file itself.
  --dry-run             validate the config and the environment, print the resolved plan
                        (ranks, batch arithmetic, data sources, checkpoints, every default
                        filled in) and exit
  --run-dir DIR         run directory (metrics, events, checkpoints); default runs/<job.name>
  --fresh               ignore checkpoints in the run directory and start over
  --log-level LEVEL     trace | debug | info | warn | error | off (default info)
  --version             print the version and exit
  -h, --help            print this help and exit

exit codes: 0 success; 2 configuration or usage error, or a run directory or checkpoint
root that may not be used (foreign files, another run's, in use by a running job); 1 runtime
failure
)";
}

std::optional<run_options> parse_run_options(int argc, const char* const* argv, std::string& error) {
  run_options o;
  auto value_of = [&](int& i, std::string_view flag, std::string& out) {
    std::string_view arg(argv[i]);
    if (arg.size() > flag.size() && arg[flag.size()] == '=') {
      out = std::string(arg.substr(flag.size() + 1));
      return true;
    }
    if (i + 1 >= argc) {
      error = std::string(flag) + " needs a value";
      return false;
    }
    out = argv[++i];
    return true;
  };
  auto is_flag = [](std::string_view arg, std::string_view flag) {
    return arg == flag || (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag &&
                           arg[flag.size()] == '=');
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    std::string v;
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "--version") {
      o.version = true;
    } else if (arg == "--dry-run") {
      o.dry_run = true;
    } else if (arg == "--fresh") {
      o.fresh = true;
    } else if (is_flag(arg, "--set")) {
      if (!value_of(i, "--set", v)) return std::nullopt;
      o.overrides.push_back(v);
    } else if (is_flag(arg, "--run-dir")) {
      if (!value_of(i, "--run-dir", v)) return std::nullopt;
      o.run_dir = v;
    } else if (is_flag(arg, "--log-level")) {
      if (!value_of(i, "--log-level", v)) return std::nullopt;
      log::level l;
      if (!log::parse_level(v, l)) {
        error = "--log-level: unknown level \"" + v + "\"";
        return std::nullopt;
      }
      o.log_level = v;
    } else if (!arg.empty() && arg[0] == '-') {
      error = "unknown option " + std::string(arg);
      return std::nullopt;
    } else if (o.config_path.empty()) {
      o.config_path = std::string(arg);
    } else {
      error = "unexpected argument " + std::string(arg) + " (only one CONFIG.toml)";
      return std::nullopt;
    }
  }
  if (o.config_path.empty() && !o.help && !o.version) {
    error = "missing CONFIG.toml";
    return std::nullopt;
  }
  return o;
}

}  // namespace msomni::apps
