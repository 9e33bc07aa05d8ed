// msomni-rank: one data-parallel rank in its own process. Standalone mode (used by tests and
// benchmarks until the orchestrator drives ranks): prints "ADDR <name> <host:port>", reads
// "PEER <name> <addr>" lines up to "GO", forms a ring of all named processes (rank = sorted
// position), trains, and prints one "STEP {json}" line per optimizer step, then
// "RESULT ok checksum=<hex>". With --control HOST:PORT (how msomni-run and msomni-agent
// start ranks) the rank is managed instead (see managed_rank.hpp); it then needs the job's
// token in $MSOMNI_JOB_TOKEN, which it proves to every peer. `msomni-rank --stamp-log LOG`
// is the copier of an outliving rank's output (node_agent's outliving_logger): it appends
// stdin to LOG, each line stamped with the time it was read, until EOF.
// Exit codes: 0 ok, 2 bad config or usage, 1 runtime failure.
#include "managed_rank.hpp"
#include "standalone_rank.hpp"
#include "config/config_loader.hpp"
#include "core/command_line.hpp"
#include "core/log.hpp"
#include "core/secret_file.hpp"
#include "core/stamped_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>


#include <iostream>

using namespace msomni;

int main(int argc, char** argv) {
  ::umask(077);  // checkpoints and logs private to the user, whoever started the rank
  if (argc == 3 && std::string_view(argv[1]) == "--stamp-log") {
    const int log = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log < 0) return 1;
    copy_stamped(0, log);
    return ::close(log) == 0 ? 0 : 1;
  }
  std::string config_path, name, control, ckpt_dir, follow, node = "local";
  bool resume = false;
  std::vector<std::string> sets;
  int64_t steps = -1;  // -1: training.steps
  CLI::App app{"One data-parallel rank in its own process: standalone (ADDR/PEER/GO on stdin and stdout, STEP "
               "lines), or managed by the job's control process with --control.",
               "msomni-rank"};
  command_line::set_conventions(app);
  app.footer("msomni-rank --stamp-log LOG: the copier of a rank that outlives its node agent (a job with a control "
             "store): appends stdin to LOG, each line stamped with the UTC time it was read, until EOF.\n"
             "Exit codes: 0 ok, 2 bad config or usage, 1 runtime failure.");
  app.add_option("CONFIG.toml", config_path, "the job's configuration")->required();
  app.add_option("--name", name, "this rank's name (its ring position is its place in the sorted names)")
      ->type_name("NAME")
      ->required();
  app.add_option("--control", control,
                 "the job's control process: the rank is managed (needs --ckpt-dir and the job's token in $" +
                     std::string(job_token_env) + ")")
      ->type_name("HOST:PORT");
  app.add_option("--follow-control", follow,
                 "managed ranks of a job with a control store: the job's control file (control.json); the rank "
                 "trains on when its control process is gone and rejoins the leader that file names next")
      ->type_name("FILE");
  app.add_option("--node", node, "the node the rank runs on (managed ranks)")->capture_default_str();
  app.add_option("--ckpt-dir", ckpt_dir, "the checkpoint root")->type_name("DIR");
  app.add_flag("--resume", resume, "standalone: resume from the newest checkpoint in --ckpt-dir");
  app.add_option("--set", sets, "override one config key, as msomni-run --set (repeatable)")
      ->type_name("KEY.PATH=VALUE")
      ->allow_extra_args(false);
  app.add_option("--steps", steps, "standalone: optimizer steps to train (default: training.steps)")
      ->type_name("N")
      ->transform(command_line::within<int64_t>(0, config::limits::training::steps.max));
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  config::job_config cfg;
  try {
    cfg = config::load_file(config_path, sets);
  } catch (const config::config_errors& e) {
    std::cerr << e.what();
    return 2;
  }
  if (!follow.empty() && control.empty()) {
    std::cerr << "msomni-rank: --follow-control needs --control\n";
    return 2;
  }
  if (!control.empty()) {
    if (ckpt_dir.empty()) {
      std::cerr << "msomni-rank: --control needs --ckpt-dir\n";
      return 2;
    }
    // The agent that started us put the job's token in the environment (never in argv).
    const auto token = take_secret_env(job_token_env);
    if (token.empty()) {
      std::cerr << "msomni-rank: --control needs the job's token in " << job_token_env << "\n";
      return 2;
    }
    return apps::run_managed_rank(cfg, {config_path, sets, name, node, control, ckpt_dir, token, follow});
  }
  return apps::run_standalone_rank(cfg, {config_path, name, ckpt_dir, resume, steps});
}
