// make_batch_source and rank_actor_threads (see batch_source_factory.hpp).
#include "batch_source_factory.hpp"

#include "actor_pipeline_source.hpp"
#include "config/job_config.hpp"
#include "pipeline_source.hpp"
#include "synthetic_source.hpp"

namespace msomni::rank_worker {

namespace {
bool uses_actor_pipeline(const config::job_config& cfg) { return !all_synthetic(cfg) && cfg.io.pipeline == "actors"; }
}  // namespace

std::unique_ptr<batch_source> make_batch_source(caf::actor_system& sys, const config::job_config& cfg,
                                                const data_slot& slot,
                                                std::shared_ptr<std::pmr::memory_resource> batch_memory,
                                                data_watch watch) {
  if (all_synthetic(cfg)) return std::make_unique<synthetic_source>(cfg, slot, std::move(batch_memory));
  if (uses_actor_pipeline(cfg))
    return std::make_unique<actor_pipeline_source>(sys, cfg, slot, std::move(batch_memory), std::move(watch));
  return std::make_unique<pipeline_source>(cfg, slot, std::move(batch_memory), std::move(watch));
}

std::string describe_batch_source(const config::job_config& cfg) {
  if (all_synthetic(cfg)) return "generated batches (synthetic:// sources)";
  if (uses_actor_pipeline(cfg))
    return "the data stage actors (" + std::to_string(cfg.io.decode_workers) + " decode workers, prefetch depth " +
           std::to_string(cfg.io.prefetch_depth) + ", video downgrade " + (cfg.io.downgrade_video ? "on" : "off") + ")";
  return "the inline pipeline (decoding in the training thread)";
}

size_t rank_actor_threads(const config::job_config& cfg) {
  return uses_actor_pipeline(cfg) ? size_t(cfg.io.decode_workers) + 2 : 1;
}

}  // namespace msomni::rank_worker
