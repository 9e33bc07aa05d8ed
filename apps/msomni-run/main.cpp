// msomni-run: validate a job config and run it (or, with --dry-run, print the plan).
#include "control_election.hpp"
#include "launch_job.hpp"
#include "slurm_launch.hpp"
#include "model_check.hpp"
#include "resume_check.hpp"
#include "run_summary.hpp"
#include "run_options.hpp"

#include "config/config_loader.hpp"
#include "core/log.hpp"
#include "device/device_info.hpp"
#include "health_preflight.hpp"
#include "device/gpu_facts.hpp"
#include "nccl/nccl_info.hpp"
#include "remote_io.hpp"
#include "remote_storage.hpp"
#include "source_probe.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <iostream>

namespace {

constexpr int exit_ok = 0;
constexpr int exit_runtime = 1;
constexpr int exit_config = 2;

void print_environment() {
  const auto dev = msomni::kernels::probe_devices();
  const auto be = msomni::transport::probe_backends();
  std::cout << "  environment:  UCX " << be.ucx_version << ", NCCL "
            << (be.nccl_compiled ? be.nccl_version : std::string("not compiled")) << ", CUDA "
            << (dev.cuda_compiled ? "compiled" : "not compiled") << "; GPUs: ";
  if (dev.gpus.empty()) std::cout << "none (" << dev.status << ")";
  for (const auto& g : dev.gpus)
    std::cout << "[" << g.index << "] " << g.name << " " << (g.memory_bytes >> 30) << " GiB sm_"
              << g.compute_major << g.compute_minor << " ";
  std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Run directories, checkpoints, logs and journals are the user's alone (0700/0600); the
  // rank processes inherit this mask.
  ::umask(077);
  msomni::apps::run_options opts;
  if (const auto rc = msomni::apps::parse_run_options(argc, argv, opts, std::cout, std::cerr)) return *rc;
  msomni::log::level lvl;
  msomni::log::parse_level(opts.log_level, lvl);
  msomni::log::set_level(lvl);

  msomni::config::job_config cfg;
  try {
    cfg = msomni::config::load_file(opts.config_path, opts.overrides);
  } catch (const msomni::config::config_errors& e) {
    std::cerr << "msomni-run: the configuration is invalid; nothing was started.\n" << e.what();
    return exit_config;
  }
  // model.name must name a model this job can create: built in, or registered by model.plugin.
  msomni::apps::model_summary model;
  if (const auto problems = msomni::apps::check_model(cfg, opts.dry_run, model); !problems.empty()) {
    std::cerr << "msomni-run: the configuration is invalid; nothing was started.\n";
    for (const auto& e : problems) std::cerr << e.to_string() << "\n";
    return exit_config;
  }
  // Inside a Slurm allocation (cluster.slurm): its nodes replace [[cluster.nodes]].
  std::vector<std::string> slurm_problems;
  const auto slurm = msomni::apps::plan_slurm(cfg, slurm_problems);
  if (!slurm_problems.empty()) {
    std::cerr << "msomni-run: the job cannot run on this Slurm allocation; nothing was started.\n";
    for (const auto& p : slurm_problems) std::cerr << "  " << p << "\n";
    return exit_config;
  }
  // Every local source must have a usable sample before a rank starts (headers only, cheap).
  msomni::data::set_remote_io(msomni::data::remote_io_of(cfg));  // s3:// and http(s):// sources
  const auto storage = msomni::data::make_local_storage();
  const auto usable = [&](const std::filesystem::path& p, msomni::modality kind, uint64_t max_bytes) {
    return msomni::data::usable_source_problem(*storage, p.string(), kind, max_bytes);
  };
  // training.device = "cuda" needs a GPU for every rank this machine may run.
  const auto gpus = msomni::kernels::gather_gpu_facts();
  auto env = msomni::config::check_environment(cfg, usable);
  for (auto& e : msomni::config::check_devices(cfg, gpus)) env.push_back(std::move(e));
  if (!env.empty()) {
    std::cerr << "msomni-run: the configuration does not fit this machine; nothing was started.\n";
    for (const auto& e : env) std::cerr << e.to_string() << "\n";
    return exit_config;
  }
  const auto paths = msomni::apps::resolve_run_paths(cfg, opts.run_dir);
  if (auto problems = msomni::apps::check_run_paths(paths, cfg); !problems.empty()) {
    std::cerr << "msomni-run: the run directory or checkpoint root cannot be used; nothing was started.\n";
    for (const auto& p : problems) std::cerr << p << "\n";
    return exit_config;
  }
  // [control] store: stand for the job's leadership first; a standby waits here, and the
  // resume check below then sees the checkpoints its dead leader left.
  msomni::apps::control_role control;
  if (!cfg.control.store.empty() && !opts.dry_run)
    if (const auto rc = msomni::apps::stand_for_control(cfg, paths, opts, control, std::cerr)) return *rc;
  // A resume must keep every key that decides what the checkpoint's state means.
  std::optional<msomni::apps::resume_check> resume_from;
  if (!opts.fresh) {
    resume_from = msomni::apps::check_resume(cfg, paths.checkpoint_dir);
    if (resume_from && !resume_from->comparison.compatible()) {
      std::cerr << "msomni-run: this configuration cannot resume from the checkpoint at step " << resume_from->step
                << " (" << resume_from->manifest_path.string() << "); nothing was started.\n";
      for (const auto& line : msomni::apps::refusal_lines(cfg, *resume_from)) std::cerr << line << "\n";
      std::cerr << "  keep those keys as the checkpoint has them to resume, or start over with --fresh (or another "
                   "--run-dir)\n";
      return exit_config;
    }
  }
  // The pre-flight health check at health.preflight's level: a failed check starts nothing.
  nlohmann::ordered_json preflight;
  if (const int rc = msomni::health::run_preflight(cfg, paths.checkpoint_dir, std::cerr, &preflight); rc != 0) return rc;
  if (opts.dry_run) {
    if (slurm)
      for (const auto& n : slurm->notes) std::cout << "  slurm: " << n << "\n";
    std::cout << msomni::config::render_plan(cfg, gpus);
    std::cout << msomni::apps::render_model_summary(model, cfg);
    std::cout << "  run directory: " << paths.run_dir.string() << "\n  checkpoint root: " << paths.checkpoint_dir.string()
              << "\n";
    if (const auto holder = msomni::dir_lock::holder_of(paths.run_dir))
      std::cout << "  note: the run directory is in use now by " << holder->describe()
                << "; a start would be refused until it ends\n";
    if (resume_from) {
      const auto changes = msomni::apps::accepted_summary(*resume_from);
      std::cout << "  resume:       from the checkpoint at step " << resume_from->step
                << (!resume_from->comparison.saved_config_known ? " (it records no config; not compared)"
                    : changes.empty()                           ? " (same config)"
                                                                : "; changed keys accepted: " + changes)
                << "\n";
    }
    print_environment();
    std::cout << "dry run: configuration valid, nothing started.\n";
    return exit_ok;
  }
  try {
    const int rc = msomni::apps::launch_job(cfg, paths, opts, resume_from, preflight,
                                            control.leadership ? &control : nullptr, slurm ? &*slurm : nullptr);
    if (rc == msomni::orchestrator::exit_deposed && control.leadership) return msomni::apps::stand_again(argc, argv, control, std::cerr);
    return rc;
  } catch (const msomni::apps::run_paths_refused& e) {
    std::cerr << "msomni-run: " << e.what() << "; nothing was started.\n";
    return exit_config;
  } catch (const std::exception& e) {
    std::cerr << "msomni-run: " << e.what() << "\n";
    return exit_runtime;
  }
}
