// The `msomni` control CLI: one entry per subcommand, so new ones (status, scale-down,
// scale-up, preempt, ...) are added by writing a function and listing it in main.cpp.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace msomni::cli {

// Exit codes shared by every subcommand.
constexpr int exit_ok = 0;
constexpr int exit_failed = 1;   // the command ran and found a problem (e.g. corrupt checkpoint)
constexpr int exit_usage = 2;

struct command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
};

// `msomni ckpt ls|verify|export DIR ...`
int run_ckpt(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// A running job, found through its run directory (control.json): `msomni status|scale-down|
// scale-up|stop --run-dir DIR ...`. Exit 1 when the job refuses (the reason is printed).
int run_status(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_scale_down(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_scale_up(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_stop(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `msomni job --scheduler-info FILE ... -- COMMAND`: run a command as a job of msomni-sched.
int run_job(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `msomni sched-status --scheduler-info FILE [--json]`: msomni-sched's queue and jobs.
int run_sched_status(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `msomni inspect --run-dir DIR [--scheduler-info FILE] [--once [--json]]`: the live inspector
// console (actors, ranks, data, elastic timeline, predictor, scheduler). Exit 1 when no job
// answers or it refuses (metrics off, wrong token).
int run_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `msomni plot RUN_DIR [--out FILE.png]`: a PNG of the run's metrics and elastic events.
int run_plot(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `msomni dataset pack --images|--videos DIR --out OUT ...` and `msomni dataset check
// DIR|URI [--modality M] [--json]`: WebDataset shards from a folder, and their check (exit 1
// when problems were found).
int run_dataset(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `msomni health-check CONFIG [--set k=v]... [--json] [--level quick|full] [--run-dir DIR]`:
// the pre-flight checks of a job on this node (exit 1 when a check failed).
int run_health_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace msomni::cli
