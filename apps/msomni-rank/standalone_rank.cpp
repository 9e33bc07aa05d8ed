// msomni-rank's standalone mode (see standalone_rank.hpp).
#include "standalone_rank.hpp"

#include "collectives/gradient_communicator.hpp"
#include "collectives/ring_communicator.hpp"
#include "rank_compute.hpp"
#include "step_line.hpp"
#include "gateway/gateway.hpp"
#include "messages/actor_interfaces.hpp"
#include "hub/peer_wiring.hpp"
#include "hub/transport_hub.hpp"
#include "builtin_models.hpp"
#include "model/model_registry.hpp"
#include "rank_trainer.hpp"
#include "batch_source_factory.hpp"
#include "pipeline_source.hpp"
#include "rank_checkpointer.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

namespace msomni::apps {

namespace {

using namespace std::chrono_literals;

rank_worker::checkpointing_settings checkpointing_of(const config::job_config& cfg, const std::string& dir) {
  return {dir,
          static_cast<uint64_t>(cfg.checkpoint.interval_steps),
          static_cast<uint64_t>(cfg.checkpoint.keep),
          static_cast<int>(cfg.checkpoint.zstd_level),
          static_cast<int>(cfg.checkpoint.zstd_threads),
          config::config_hash(cfg),
          nullptr,
          static_cast<uint64_t>(cfg.checkpoint.max_consecutive_failures),
          nullptr,
          cfg.resolved_values};
}

struct standalone_run {
  caf::actor_system& sys;
  const config::job_config& cfg;
  rank_worker::data_slot slot;
  std::shared_ptr<std::pmr::memory_resource> batch_memory;
  std::unique_ptr<rank_worker::batch_source> data;
};

// --resume: the newest checkpoint's state, when there is one.
void resume_from(standalone_run& run, rank_worker::rank_trainer& trainer, const standalone_options& o,
                 const transport::ring_communicator& ring) {
  std::string log;
  auto state = rank_worker::rank_checkpointer::load_latest(o.ckpt_dir, static_cast<uint32_t>(ring.rank()),
                                                           static_cast<uint32_t>(ring.size()),
                                                           rank_worker::all_synthetic(run.cfg), log);
  std::cerr << log;
  if (!state) return;
  if (!trainer.load_state(*state)) {
    // The data order restarts, reshuffled by the resume step so it does not replay step 0's.
    auto reseeded = run.cfg;
    reseeded.training.seed = run.cfg.training.seed + static_cast<int64_t>(trainer.steps_done());
    run.data = rank_worker::make_batch_source(run.sys, reseeded, run.slot, run.batch_memory);
    trainer.rebind(*run.data);
  }
  std::cout << "RESUMED " << trainer.steps_done() << std::endl;
}

void train(rank_worker::rank_trainer& trainer, transport::ring_communicator& ring, uint64_t total,
           rank_worker::rank_checkpointer* checkpoints) {
  while (trainer.steps_done() < total) {
    const auto r = trainer.step();
    auto fields = step_fields(r);
    put_number(fields, "tokens_per_s", r.tokens_per_s);
    fields["data_wait_ms"] = static_cast<double>(r.data_wait_ns) / 1e6;
    std::cout << step_line(fields) << std::endl;
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
}

void run_ring(caf::actor_system& sys, const config::job_config& cfg, const standalone_options& o) {
  transport::ucx_node_options node_opt;
  node_opt.name = o.name;
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
  transport::ring_communicator ring(hub, transport::wire_peers(hub, o.name, 30s, std::cin, std::cout), 1);

  model::model_registry registry;
  models::register_builtin_models(registry);
  // Standalone ranks (tools, tests) keep to one thread unless training.threads says more; on
  // one machine, their local index is their ring position unless MSOMNI_NODE_SLOT says.
  const auto compute = decide_rank_compute(cfg, std::max<int64_t>(1, cfg.training.threads), ring.rank());
  std::cerr << compute.log_line << std::endl;
  auto model = model::create_model(compute.context, registry, std::filesystem::path(o.config_path).parent_path().string());
  const auto gradients = transport::make_gradient_communicator(ring, compute.cuda_device(), {});
  std::cerr << "GRADIENTS " << gradients.description << std::endl;
  standalone_run run{sys, cfg,
                     {static_cast<uint32_t>(ring.rank()), static_cast<uint32_t>(ring.size()), cfg.training.grad_accum,
                      cfg.training.micro_batch},
                     compute.batch_memory, nullptr};
  run.data = rank_worker::make_batch_source(sys, cfg, run.slot, compute.batch_memory);
  real_clock clk;
  rank_worker::rank_trainer trainer(*model, ring, *run.data, clk, rank_worker::settings_from(cfg));
  trainer.rebind_gradients(gradients.nccl.get());
  std::unique_ptr<rank_worker::rank_checkpointer> checkpoints;
  if (!o.ckpt_dir.empty()) {
    if (o.resume) resume_from(run, trainer, o, ring);
    checkpoints = std::make_unique<rank_worker::rank_checkpointer>(checkpointing_of(cfg, o.ckpt_dir),
                                                                   static_cast<uint32_t>(ring.rank()));
  }
  train(trainer, ring, static_cast<uint64_t>(o.steps >= 0 ? o.steps : cfg.training.steps), checkpoints.get());
  for (std::string line; std::getline(std::cin, line);) {
  }
}

}  // namespace

int run_standalone_rank(const config::job_config& cfg, const standalone_options& o) {
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{configure_process(caf_cfg, rank_worker::rank_actor_threads(cfg), idle_threads::park)};
  try {
    run_ring(sys, cfg, o);
  } catch (const std::exception& e) {
    std::cout << "RESULT fail " << e.what() << std::endl;
    std::cerr << "msomni-rank: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace msomni::apps
