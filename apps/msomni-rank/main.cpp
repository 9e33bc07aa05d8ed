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
#include "collectives/gradient_communicator.hpp"
#include "collectives/ring_communicator.hpp"
#include "managed_rank.hpp"
#include "rank_compute.hpp"
#include "step_line.hpp"
#include "gateway/gateway.hpp"
#include "messages/actor_interfaces.hpp"
#include "config/config_loader.hpp"
#include "core/command_line.hpp"
#include "core/log.hpp"
#include "core/secret_file.hpp"
#include "core/stamped_log.hpp"
#include "hub/transport_hub.hpp"
#include "builtin_models.hpp"
#include "model/model_registry.hpp"
#include "rank_trainer.hpp"
#include "batch_source_factory.hpp"
#include "pipeline_source.hpp"
#include "rank_checkpointer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

using namespace msomni;
using namespace std::chrono_literals;

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
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{configure_process(caf_cfg, rank_worker::rank_actor_threads(cfg), idle_threads::park)};
  try {
    transport::ucx_node_options node_opt;
    node_opt.name = name;
    node_opt.keepalive_interval =
        std::chrono::milliseconds(static_cast<int64_t>(cfg.elasticity.heartbeat_interval_s * 1000));
    node_opt.keepalive_misses = static_cast<int>(cfg.elasticity.heartbeat_misses);
    transport::transport_hub hub(node_opt);
    transport::gateway gw(sys, hub);
    // A worker that takes its interface and does nothing with it: these ranks are never planned.
    gw.publish("worker", sys.spawn([]() -> msg::worker_actor::behavior_type {
      return {[](const msg::join_world&) {}, [](const msg::memory_fit&) {}, [](const msg::rejoin_answer&) {},
              [](const msg::heartbeat&) {}};
    }));
    std::cout << "ADDR " << name << " " << hub.node().address() << std::endl;
    std::vector<std::string> members{name};
    std::vector<std::pair<std::string, std::string>> peers;
    for (std::string line; std::getline(std::cin, line) && line != "GO";) {
      std::istringstream in(line);
      std::string tag, n, addr;
      in >> tag >> n >> addr;
      if (tag == "PEER" && n != name) peers.emplace_back(n, addr), members.push_back(n);
    }
    for (auto& [n, addr] : peers)
      if (n < name) hub.node().connect(addr);
    for (auto& [n, addr] : peers)
      if (!hub.node().wait_up(n, 30s)) throw std::runtime_error("peer " + n + " never came up");
    std::sort(members.begin(), members.end());
    transport::ring_communicator ring(hub, members, 1);

    model::model_registry registry;
    models::register_builtin_models(registry);
    // Standalone ranks (tools, tests) keep to one thread unless training.threads says more; on
    // one machine, their local index is their ring position unless MSOMNI_NODE_SLOT says.
    const auto compute = apps::decide_rank_compute(cfg, std::max<int64_t>(1, cfg.training.threads), ring.rank());
    std::cerr << compute.log_line << std::endl;
    auto model = model::create_model(compute.context, registry, std::filesystem::path(config_path).parent_path().string());
    const auto gradients = transport::make_gradient_communicator(ring, compute.cuda_device(), {});
    std::cerr << "GRADIENTS " << gradients.description << std::endl;
    const rank_worker::data_slot slot{static_cast<uint32_t>(ring.rank()), static_cast<uint32_t>(ring.size()),
                                      cfg.training.grad_accum, cfg.training.micro_batch};
    auto data = rank_worker::make_batch_source(sys, cfg, slot, compute.batch_memory);
    real_clock clk;
    rank_worker::rank_trainer trainer(*model, ring, *data, clk, rank_worker::settings_from(cfg));
    trainer.rebind_gradients(gradients.nccl.get());
    const uint64_t total = static_cast<uint64_t>(steps >= 0 ? steps : cfg.training.steps);
    std::unique_ptr<rank_worker::rank_checkpointer> checkpoints;
    if (!ckpt_dir.empty()) {
      rank_worker::checkpointing_settings cs{ckpt_dir,
                                             static_cast<uint64_t>(cfg.checkpoint.interval_steps),
                                             static_cast<uint64_t>(cfg.checkpoint.keep),
                                             static_cast<int>(cfg.checkpoint.zstd_level),
                                             static_cast<int>(cfg.checkpoint.zstd_threads),
                                             config::config_hash(cfg), nullptr,
                                             static_cast<uint64_t>(cfg.checkpoint.max_consecutive_failures),
                                             nullptr,
                                             cfg.resolved_values};
      if (resume) {
        std::string log;
        auto state = rank_worker::rank_checkpointer::load_latest(ckpt_dir, static_cast<uint32_t>(ring.rank()),
                                                                 static_cast<uint32_t>(ring.size()),
                                                                 rank_worker::all_synthetic(cfg), log);
        std::cerr << log;
        if (state) {
          if (!trainer.load_state(*state)) {
            // The data order restarts, reshuffled by the resume step so it does not replay step 0's.
            auto reseeded = cfg;
            reseeded.training.seed = cfg.training.seed + static_cast<int64_t>(trainer.steps_done());
            data = rank_worker::make_batch_source(sys, reseeded, slot, compute.batch_memory);
            trainer.rebind(*data);
          }
          std::cout << "RESUMED " << trainer.steps_done() << std::endl;
        }
      }
      checkpoints = std::make_unique<rank_worker::rank_checkpointer>(cs, static_cast<uint32_t>(ring.rank()));
    }
    while (trainer.steps_done() < total) {
      const auto r = trainer.step();
      auto fields = apps::step_fields(r);
      put_number(fields, "tokens_per_s", r.tokens_per_s);
      fields["data_wait_ms"] = static_cast<double>(r.data_wait_ns) / 1e6;
      std::cout << apps::step_line(fields) << std::endl;
      if (checkpoints) checkpoints->after_step(trainer, ring, trainer.steps_done() == total);
    }
    if (checkpoints) {
      checkpoints->finish(ring);
      std::cout << "CHECKPOINTS committed=" << checkpoints->saves_committed()
                << " blocked_s=" << checkpoints->blocked_seconds() << std::endl;
    }
    char sum[64];
    std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(trainer.parameter_checksum()));
    std::cout << "RESULT ok checksum=" << sum << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
    }
  } catch (const std::exception& e) {
    std::cout << "RESULT fail " << e.what() << std::endl;
    std::cerr << "msomni-rank: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
