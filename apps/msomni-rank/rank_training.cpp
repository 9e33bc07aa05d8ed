// The rank's model, data and trainer, and joining a plan's membership: the ring (and NCCL on a
// CUDA rank) of its epoch, the data slot, and the state from the newest checkpoint or from
// the first member (see managed_rank_state.hpp).
#include "managed_rank_state.hpp"

#include "builtin_models.hpp"
#include "config/config_loader.hpp"
#include "core/log.hpp"
#include "rank_compute.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace msomni::apps::rank_shell {

using namespace std::chrono_literals;

std::unique_ptr<model::trainable_model> managed_rank::make_model() {
  // training.threads, or this node's cores shared by the ranks its agent may run, less
  // this rank's decode workers.
  const char* slots = std::getenv("MSOMNI_NODE_SLOTS");
  const auto threads = config::threads_per_rank(cfg_, slots ? std::atoll(slots) : 1,
                                                std::max<int64_t>(1, std::thread::hardware_concurrency()));
  // training.device: this rank's GPU (its local index on the node), or the CPU.
  const auto compute = decide_rank_compute(cfg_, threads, 0);
  cuda_device_ = compute.cuda_device();
  if (metrics_) metrics_->set_compute(cuda_device_, threads);
  batch_memory_ = compute.batch_memory;  // outlives every source and batch built from it
  if (probe_) probe_->use_batch_memory(batch_memory_);
  std::cout << compute.log_line << std::endl;
  return model::create_model(compute.context, registry_, std::filesystem::path(cfg_.source_path).parent_path().string());
}

// Data and trainer for `slot` around `model` (a fresh one when null), on the current ring.
training managed_rank::build(std::unique_ptr<model::trainable_model> model, const rank_worker::data_slot& slot) {
  training t;
  t.model = model ? std::move(model) : make_model();
  t.data = rank_worker::make_batch_source(sys_, cfg_, slot, batch_memory_,
                                          metrics_ ? metrics_->data() : rank_worker::data_watch{});
  std::cout << "DATA " << rank_worker::describe_batch_source(cfg_) << std::endl;
  t.trainer = std::make_unique<rank_worker::rank_trainer>(*t.model, *ring_, *t.data, clock_, rank_worker::settings_from(cfg_));
  t.trainer->set_fit_source([this, model = t.model.get()](uint64_t step) -> std::optional<rank_worker::fit_target> {
    fit_ = fits_.take(step, identity_.rank, identity_.world_size);
    if (!fit_) return std::nullopt;
    // What stays beside the batch, exactly: the memory in use once the model let its last
    // batch's buffers go (weights, gradients, optimizer state, the data stages' buffers).
    model->release_batch_buffers();
    return rank_worker::fit_target{fit_->forecast_bytes,
                                   fit_->budget_bytes,
                                   cfg_.memory.device_memory_gb * 1e9,
                                   static_cast<double>(kernels::process_memory_account()->in_use()),
                                   static_cast<int64_t>(fit_->batch.micro_batch),
                                   static_cast<int64_t>(fit_->batch.seq_len)};
  });
  return t;
}

// An NCCL wait of this plan's epoch ends, like the ring's, when a newer plan supersedes the
// epoch or a member is down (NCCL alone would wait on a dead member forever).
transport::nccl_options managed_rank::nccl_options_for(const msg::join_world& plan) {
  transport::nccl_options o;
  o.abandoned = [&mailbox = hub_.mailbox(), epoch = plan.epoch, members = plan.members, me = o_.name]() -> std::string {
    if (mailbox.superseded(epoch)) return "a newer membership superseded epoch " + std::to_string(epoch);
    for (const auto& m : members)
      if (m != me && mailbox.is_down(m)) return "member " + m + " is down";
    return "";
  };
  return o;
}

// A member of the plan of `epoch` up, or a collective error: it did not answer within the
// protocol's member_wait (it is down), or a newer plan superseded this one meanwhile.
void managed_rank::wait_for_member(const std::string& peer, uint64_t epoch) {
  const auto limit = protocol_.settings().member_wait;
  const auto until = clock_.now() + limit;
  while (!hub_.node().wait_up(peer, 100ms)) {
    if (const auto newer = inbox_.newest_epoch(); newer > epoch)
      throw transport::collective_error("member " + peer + " is not up and the plan of epoch " + std::to_string(newer) +
                                        " superseded epoch " + std::to_string(epoch));
    if (clock_.now() >= until)
      throw transport::collective_error(
          "member " + peer + " did not answer within " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()) +
          " ms (the heartbeat's detection time)");
  }
}

rank_worker::rank_protocol_settings managed_rank::protocol_settings(const config::job_config& cfg, const std::string& name) {
  rank_worker::rank_protocol_settings s{name, static_cast<uint64_t>(cfg.training.steps)};
  s.member_wait = rank_worker::member_wait_for_heartbeat(cfg.elasticity.heartbeat_interval_s, cfg.elasticity.heartbeat_misses);
  return s;
}

void managed_rank::apply(const rank_worker::join_as& join) {
  const auto& plan = join.plan;
  const uint32_t rank = join.rank, world = join.world;
  identity_ = {o_.name, plan.epoch, rank, world};
  members_ = plan.members;
  for (size_t i = 0; i < plan.members.size(); ++i) {
    const auto& peer = plan.members[i];
    if (peer != o_.name && peer < o_.name && !hub_.node().is_up(peer)) hub_.node().connect(plan.addresses[i]);
  }
  for (const auto& peer : plan.members)
    if (peer != o_.name) wait_for_member(peer, plan.epoch);
  if (tr_.trainer) tr_.trainer->rebind_gradients(nullptr);
  gradients_ = {};  // the previous epoch's NCCL communicator goes before the new one forms
  ring_ = std::make_unique<transport::ring_communicator>(hub_, plan.members, plan.epoch);
  gradients_ = transport::make_gradient_communicator(*ring_, cuda_device_, nccl_options_for(plan));
  std::cout << "GRADIENTS " << gradients_.description << std::endl;
  const rank_worker::data_slot slot{rank, world, plan.grad_accum, cfg_.training.micro_batch};
  if (!tr_.trainer) {
    tr_ = build(std::move(tr_.model), slot);
  } else {
    tr_.trainer->rebind(*ring_);
    tr_.data->reslot(slot);
  }
  tr_.trainer->rebind_gradients(gradients_.nccl.get());
  tr_.trainer->set_grad_accum(plan.grad_accum);
  std::string how;
  if (join.source == rank_worker::state_from::checkpoint) {
    std::string log;
    uint64_t skipped = 0;
    auto state = rank_worker::rank_checkpointer::load_latest(o_.ckpt_dir, rank, world, rank_worker::all_synthetic(cfg_),
                                                             log, &skipped);
    if (metrics_) metrics_->on_checkpoint_load(skipped);
    std::cout << log;
    if (state) {
      const bool with_data = tr_.trainer->load_state(*state);
      how = "checkpoint step " + std::to_string(tr_.trainer->steps_done()) +
            (with_data ? "" : " (its data position is missing or of an older format: the data order restarts)");
    } else {
      if (tr_.trainer->steps_done() > 0) tr_ = build(nullptr, slot);
      tr_.trainer->rebind_gradients(gradients_.nccl.get());
      tr_.trainer->set_grad_accum(plan.grad_accum);
      how = "a fresh start (no checkpoint yet)";
    }
  } else {
    tr_.trainer->sync_state(*ring_, 0);
    how = "the live state of " + plan.members[0];
  }
  checkpoints_ = std::make_unique<rank_worker::rank_checkpointer>(
      rank_worker::checkpointing_settings{o_.ckpt_dir, static_cast<uint64_t>(cfg_.checkpoint.interval_steps),
                                          static_cast<uint64_t>(cfg_.checkpoint.keep),
                                          static_cast<int>(cfg_.checkpoint.zstd_level),
                                          static_cast<int>(cfg_.checkpoint.zstd_threads), config::config_hash(cfg_),
                                          [link = &link_](const msg::checkpoint_done& d) { link->send_checkpoint(d); },
                                          static_cast<uint64_t>(cfg_.checkpoint.max_consecutive_failures),
                                          nullptr, cfg_.resolved_values},
      rank);
  std::cout << "JOINED epoch " << plan.epoch << " as rank " << rank << " of " << world << " (grad_accum "
            << plan.grad_accum << ") at step " << tr_.trainer->steps_done() << " from " << how << std::endl;
}

}  // namespace msomni::apps::rank_shell
