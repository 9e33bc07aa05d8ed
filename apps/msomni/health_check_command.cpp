// `msomni health-check CONFIG`: the pre-flight checks of a job config on this node (config,
// data, compute, communication, storage, host), one verdict per check (docs/health_check.md).
#include "commands.hpp"

#include "health_probes.hpp"
#include "health_report.hpp"
#include "run_paths.hpp"

#include "config/config_loader.hpp"
#include "core/command_line.hpp"

#include <filesystem>
#include <iostream>

namespace msomni::cli {

int run_health_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Check a job config against this node before a start: config, data, compute, communication, storage "
               "and host, one verdict per check (docs/health_check.md).",
               "msomni health-check"};
  command_line::set_conventions(app);
  app.footer(command_line::wrap_lines(
      "Exit 0 when no check failed (warnings allowed), 1 when a check failed, 2 on bad usage or a config file that "
      "cannot be read. --level quick (the default, seconds) decodes one sample per source and skips the loopback "
      "bandwidth; full decodes a few per source, measures bandwidth and writes a larger sample.", 100));
  std::string config_path, level_name = "quick", run_dir;
  std::vector<std::string> overrides;
  bool json = false;
  app.add_option("CONFIG", config_path, "the job's TOML config")->required();
  app.add_option("--set", overrides, "override a key, as msomni-run --set (repeatable)")->type_name("KEY=VALUE");
  app.add_flag("--json", json, "the report as one JSON object");
  app.add_option("--level", level_name, "how thorough")->check(CLI::IsMember({"quick", "full"}))->capture_default_str();
  app.add_option("--run-dir", run_dir, "the run directory whose checkpoints are checked (default runs/<job.name>)")
      ->type_name("DIR");
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config_path, ec))
    return command_line::refuse(app, "cannot read the config " + config_path, err);
  const health::health_level level = *health::parse_level(level_name);
  health::health_report report;
  try {
    const auto cfg = config::load_file(config_path, overrides);
    health::health_options o;
    o.level = level;
    o.checkpoint_dir = apps::resolve_run_paths(cfg, run_dir).checkpoint_dir;
    report = health::run_health_checks(cfg, o);
  } catch (const config::config_errors& e) {
    std::vector<std::string> problems;
    for (const auto& p : e.errors()) problems.push_back(p.to_string());
    report = health::config_failed_report(config_path, problems, level);
  } catch (const std::exception& e) {
    err << "msomni health-check: " << e.what() << "\n";
    return exit_usage;
  }
  if (json) out << health::to_json(report).dump(2) << "\n";
  else out << health::render_table(report);
  return health::verdict(report) == health::check_status::fail ? exit_failed : exit_ok;
}

}  // namespace msomni::cli
