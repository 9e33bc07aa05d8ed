// msomni: the control CLI for a running job (status, scale-down, scale-up, stop) and for
// checkpoints. Dispatches the first argument to a subcommand listed in `commands`.
#include "commands.hpp"

#include <iostream>

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
};

void usage(std::ostream& os) {
  os << "usage: msomni COMMAND [ARGS...]\n\ncommands:\n";
  for (const auto& c : commands) os << "  " << c.name << "  " << c.summary << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? msomni::cli::exit_usage : msomni::cli::exit_ok;
  }
  const std::string name = argv[1];
  for (const auto& c : commands)
    if (name == c.name) return c.run({argv + 2, argv + argc}, std::cout, std::cerr);
  std::cerr << "msomni: unknown command '" << name << "'\n\n";
  usage(std::cerr);
  return msomni::cli::exit_usage;
}
