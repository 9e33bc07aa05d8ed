// msomni-run argument parsing (see run_options.hpp).
#include "run_options.hpp"

#include "core/command_line.hpp"
#include "core/log.hpp"

namespace msomni::apps {

std::optional<int> parse_run_options(int argc, const char* const* argv, run_options& o, std::ostream& out,
                                     std::ostream& err) {
  CLI::App app{"Runs the training job described by CONFIG.toml.", "msomni-run"};
  command_line::set_conventions(app);
  app.set_help_flag("-h,--help", "print this help and exit");
  app.get_formatter()->column_width(26);
  app.footer(
      "exit codes: 0 success; 1 runtime failure; 2 configuration or usage error, or a run directory\n"
      "or checkpoint root that may not be used (foreign files, another run's, in use by a running\n"
      "job); 3 a failed pre-flight check (nothing trained); 4 preempted (SIGTERM, a final checkpoint);\n"
      "5 stopped (SIGINT or msomni stop, a final checkpoint); 6 deposed (with control.store: another\n"
      "control process leads the job, or the store stayed away)");
  app.add_option("CONFIG.toml", o.config_path, "the job's configuration")->required();
  app.add_option("--set", o.overrides,
                 "override one config key (repeatable); VALUE is a TOML literal, a bare word is "
                 "taken as a string; array tables are addressed as data.sources[0].weight. Checked like the file "
                 "itself.")
      ->type_name("KEY.PATH=VALUE")
      ->allow_extra_args(false);  // one value per --set, so CONFIG.toml may follow
  app.add_flag("--dry-run", o.dry_run,
               "validate the config and the environment, print the resolved plan (ranks, batch arithmetic, data "
               "sources, checkpoints, every default filled in) and exit");
  app.add_option("--run-dir", o.run_dir, "run directory (metrics, events, checkpoints); default runs/<job.name>")
      ->type_name("DIR");
  app.add_flag("--fresh", o.fresh, "ignore checkpoints in the run directory and start over");
  app.add_option("--log-level", o.log_level, "trace | debug | info | warn | error | off")
      ->check(
          [](const std::string& v) -> std::string {
            log::level l;
            return log::parse_level(v, l) ? "" : "unknown level \"" + v + "\"";
          },
          "")
      ->type_name("LEVEL")
      ->capture_default_str();
  app.set_version_flag("--version", "msomni-run 0.1.0", "print the version and exit");
  return command_line::parse(app, argc, argv, out, err);
}

}  // namespace msomni::apps
