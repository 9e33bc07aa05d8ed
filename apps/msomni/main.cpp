// msomni: the control CLI for a running job (status, scale-down, scale-up, stop), for
// checkpoints and for jobs of msomni-sched. Dispatches the first argument to a subcommand
// listed in `commands`; each subcommand parses the rest itself (see --help of each).
#include "commands.hpp"

#include "core/command_line.hpp"

#include <iostream>
#include <utility>
#include <vector>

namespace {

const msomni::cli::command commands[] = {
    {"ckpt", "list, verify and export checkpoints: msomni ckpt ls|verify|export DIR",
     msomni::cli::run_ckpt},
    {"status", "a running job's ranks, nodes, pids, states and step: msomni status --run-dir DIR [--json]",
     msomni::cli::run_status},
    {"scale-down", "leave replicas at the next barrier: msomni scale-down --run-dir DIR --replicas N [--grace-period 120s]",
     msomni::cli::run_scale_down},
    {"scale-up", "start and join replicas at a barrier: msomni scale-up --run-dir DIR --replicas N",
     msomni::cli::run_scale_up},
    {"stop", "final checkpoint at the next barrier, then end: msomni stop --run-dir DIR", msomni::cli::run_stop},
    {"job", "run a command as a job of msomni-sched: msomni job --scheduler-info FILE --id NAME --class C --gpus N -- COMMAND",
     msomni::cli::run_job},
    {"sched-status", "msomni-sched's queue by class and bound, jobs by phase: msomni sched-status --scheduler-info FILE [--json]",
     msomni::cli::run_sched_status},
    {"inspect", "a live console of a job's actors, ranks, data stages and timeline: msomni inspect --run-dir DIR [--once [--json]]",
     msomni::cli::run_inspect},
    {"plot", "a PNG of a run's loss, step time, tokens/s, data wait, world size and events: msomni plot RUN_DIR [--out FILE.png]",
     msomni::cli::run_plot},
    {"dataset", "WebDataset shards from a folder of captioned images or videos, and their check: msomni dataset pack|check",
     msomni::cli::run_dataset},
    {"health-check", "pre-flight checks of a job config on this node: msomni health-check CONFIG [--json] [--level quick|full]",
     msomni::cli::run_health_check},
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The control CLI: a running job, its checkpoints, and jobs of msomni-sched.", "msomni"};
  msomni::command_line::set_conventions(app);
  app.footer("Run 'msomni COMMAND --help' for a command's options.");
  app.get_formatter()->column_width(16);
  app.allow_extras();  // a first argument that names no command is refused below, by name
  std::vector<std::pair<CLI::App*, const msomni::cli::command*>> subcommands;
  for (const auto& c : commands) {
    // The subcommand takes everything after its name, --help included, and parses it itself.
    auto* sub = app.add_subcommand(c.name, c.summary)->prefix_command();
    sub->set_help_flag();
    subcommands.emplace_back(sub, &c);
  }
  if (const auto rc = msomni::command_line::parse(app, argc, argv)) return *rc;
  for (const auto& [sub, c] : subcommands)
    if (sub->parsed()) return c->run(sub->remaining(), std::cout, std::cerr);
  if (const auto extra = app.remaining(); !extra.empty())
    return msomni::command_line::refuse(app, "unknown command '" + extra.front() + "'");
  std::cerr << app.help();
  return msomni::cli::exit_usage;
}
