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
#include <optional>
#include <string>
#include <type_traits>
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

namespace apps = msomni::apps;

// What the checks before a start settle: the config, its model, its Slurm allocation, this
// machine's GPUs and the run's paths.
struct checked_job {
  msomni::config::job_config cfg;
  apps::model_summary model;
  std::optional<apps::slurm_plan> slurm;
  msomni::config::node_gpu_facts gpus;
  apps::run_paths paths;
};

// Each refusal prints its reasons under `title`; returns exit_config.
template <class Problems>
int refuse(const std::string& title, const Problems& problems, const char* indent = "") {
  std::cerr << "msomni-run: " << title << "\n";
  for (const auto& p : problems) {
    if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::string>) std::cerr << indent << p << "\n";
    else std::cerr << indent << p.to_string() << "\n";
  }
  return exit_config;
}

// The config, its model, the Slurm allocation, the data and devices this machine has, the
// run's paths. nullopt: all usable; else the exit code.
std::optional<int> check_job(const apps::run_options& opts, checked_job& job) {
  try {
    job.cfg = msomni::config::load_file(opts.config_path, opts.overrides);
  } catch (const msomni::config::config_errors& e) {
    std::cerr << "msomni-run: the configuration is invalid; nothing was started.\n" << e.what();
    return exit_config;
  }
  auto& cfg = job.cfg;
  // model.name must name a model this job can create: built in, or registered by model.plugin.
  if (const auto problems = apps::check_model(cfg, opts.dry_run, job.model); !problems.empty())
    return refuse("the configuration is invalid; nothing was started.", problems);
  // Inside a Slurm allocation (cluster.slurm): its nodes replace [[cluster.nodes]].
  std::vector<std::string> slurm_problems;
  job.slurm = apps::plan_slurm(cfg, slurm_problems);
  if (!slurm_problems.empty())
    return refuse("the job cannot run on this Slurm allocation; nothing was started.", slurm_problems, "  ");
  // Every local source must have a usable sample before a rank starts (headers only, cheap).
  msomni::data::set_remote_io(msomni::data::remote_io_of(cfg));  // s3:// and http(s):// sources
  const auto storage = msomni::data::make_local_storage();
  const auto usable = [&](const std::filesystem::path& p, msomni::modality kind, uint64_t max_bytes) {
    return msomni::data::usable_source_problem(*storage, p.string(), kind, max_bytes);
  };
  // training.device = "cuda" needs a GPU for every rank this machine may run.
  job.gpus = msomni::kernels::gather_gpu_facts();
  auto env = msomni::config::check_environment(cfg, usable);
  for (auto& e : msomni::config::check_devices(cfg, job.gpus)) env.push_back(std::move(e));
  if (!env.empty()) return refuse("the configuration does not fit this machine; nothing was started.", env);
  job.paths = apps::resolve_run_paths(cfg, opts.run_dir);
  if (auto problems = apps::check_run_paths(job.paths, cfg); !problems.empty())
    return refuse("the run directory or checkpoint root cannot be used; nothing was started.", problems);
  return std::nullopt;
}

// A resume must keep every key that decides what the checkpoint's state means. nullopt: it
// may (or there is nothing to resume); else the exit code.
std::optional<int> check_resume_keys(const checked_job& job, std::optional<apps::resume_check>& resume_from) {
  resume_from = apps::check_resume(job.cfg, job.paths.checkpoint_dir);
  if (!resume_from || resume_from->comparison.compatible()) return std::nullopt;
  std::cerr << "msomni-run: this configuration cannot resume from the checkpoint at step " << resume_from->step << " ("
            << resume_from->manifest_path.string() << "); nothing was started.\n";
  for (const auto& line : apps::refusal_lines(job.cfg, *resume_from)) std::cerr << line << "\n";
  std::cerr << "  keep those keys as the checkpoint has them to resume, or start over with --fresh (or another "
               "--run-dir)\n";
  return exit_config;
}

int print_dry_run(const checked_job& job, const std::optional<apps::resume_check>& resume_from) {
  if (job.slurm)
    for (const auto& n : job.slurm->notes) std::cout << "  slurm: " << n << "\n";
  std::cout << msomni::config::render_plan(job.cfg, job.gpus);
  std::cout << apps::render_model_summary(job.model, job.cfg);
  std::cout << "  run directory: " << job.paths.run_dir.string()
            << "\n  checkpoint root: " << job.paths.checkpoint_dir.string() << "\n";
  if (const auto holder = msomni::dir_lock::holder_of(job.paths.run_dir))
    std::cout << "  note: the run directory is in use now by " << holder->describe()
              << "; a start would be refused until it ends\n";
  if (resume_from) {
    const auto changes = apps::accepted_summary(*resume_from);
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

}  // namespace

int main(int argc, char** argv) {
  // Run directories, checkpoints, logs and journals are the user's alone (0700/0600); the
  // rank processes inherit this mask.
  ::umask(077);
  apps::run_options opts;
  if (const auto rc = apps::parse_run_options(argc, argv, opts, std::cout, std::cerr)) return *rc;
  msomni::log::level lvl;
  msomni::log::parse_level(opts.log_level, lvl);
  msomni::log::set_level(lvl);
  checked_job job;
  if (const auto rc = check_job(opts, job)) return *rc;
  // [control] store: stand for the job's leadership first; a standby waits here, and the
  // resume check below then sees the checkpoints its dead leader left.
  apps::control_role control;
  if (!job.cfg.control.store.empty() && !opts.dry_run)
    if (const auto rc = apps::stand_for_control(job.cfg, job.paths, opts, control, std::cerr)) return *rc;
  std::optional<apps::resume_check> resume_from;
  if (!opts.fresh)
    if (const auto rc = check_resume_keys(job, resume_from)) return *rc;
  // The pre-flight health check at health.preflight's level: a failed check starts nothing.
  nlohmann::ordered_json preflight;
  if (const int rc = msomni::health::run_preflight(job.cfg, job.paths.checkpoint_dir, std::cerr, &preflight); rc != 0)
    return rc;
  if (opts.dry_run) return print_dry_run(job, resume_from);
  try {
    const int rc = apps::launch_job(job.cfg, job.paths, opts, resume_from, preflight,
                                    control.leadership ? &control : nullptr, job.slurm ? &*job.slurm : nullptr);
    if (rc == msomni::orchestrator::exit_deposed && control.leadership) return apps::stand_again(argc, argv, control, std::cerr);
    return rc;
  } catch (const apps::run_paths_refused& e) {
    std::cerr << "msomni-run: " << e.what() << "; nothing was started.\n";
    return exit_config;
  } catch (const std::exception& e) {
    std::cerr << "msomni-run: " << e.what() << "\n";
    return exit_runtime;
  }
}
