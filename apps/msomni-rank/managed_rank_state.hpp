// The rank's shell (run_managed_rank, managed_rank.hpp), one file per purpose:
//   managed_rank.cpp        the process: transport, the "worker" actor, warm-up, the command loop
//   rank_training.cpp       the model, data and trainer; joining a plan's membership
//   rank_commands.cpp       carrying out rank_protocol's commands; leaving and failing
//   rank_follow.cpp         the control process's loss and following its next leader
//   rank_memory_report.cpp  memory samples and memory fit outcomes to the orchestrator
// Private to msomni-rank.
#pragma once

#include "managed_rank.hpp"

#include "collectives/gradient_communicator.hpp"
#include "collectives/ring_communicator.hpp"
#include "control_link.hpp"
#include "core/clock.hpp"
#include "core/control_file.hpp"
#include "core/leader_follow.hpp"
#include "fit_inbox.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "memory_probe.hpp"
#include "messages/catalog.hpp"
#include "model/model_registry.hpp"
#include "plan_inbox.hpp"
#include "rank_checkpointer.hpp"
#include "rank_metrics.hpp"
#include "rank_protocol.hpp"
#include "rank_trainer.hpp"
#include "batch_source_factory.hpp"
#include "builtin_models.hpp"
#include "checkpoint_store.hpp"
#include "config/config_loader.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"
#include "hub/transport_metrics.hpp"
#include "memory/memory_account.hpp"
#include "memory_features.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_pusher.hpp"
#include "pipeline_source.hpp"
#include "rank_compute.hpp"
#include "step_line.hpp"

#include <nlohmann/json.hpp>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace msomni::apps::rank_shell {

// The model, data and trainer of one rank; rebuilt from scratch when a rollback finds no
// checkpoint (the job restarts from step 0, exactly as a fresh run).
struct training {
  std::unique_ptr<model::trainable_model> model;
  std::unique_ptr<rank_worker::batch_source> data;
  std::unique_ptr<rank_worker::rank_trainer> trainer;
};

class managed_rank {
 public:
  // `metrics`: the rank's series, pushed to the control process; null when metrics are off.
  managed_rank(const config::job_config& cfg, const managed_rank_options& o, caf::actor_system& sys,
               transport::transport_hub& hub, transport::gateway& gw, rank_worker::rank_metrics* metrics);
  ~managed_rank();

  int run();
  void report_failure(const std::string& why);

 private:
  // rank_training.cpp
  std::unique_ptr<model::trainable_model> make_model();
  training build(std::unique_ptr<model::trainable_model> model, const rank_worker::data_slot& slot);
  transport::nccl_options nccl_options_for(const msg::join_world& plan);
  void wait_for_member(const std::string& peer, uint64_t epoch);
  static rank_worker::rank_protocol_settings protocol_settings(const config::job_config& cfg, const std::string& name);
  void apply(const rank_worker::join_as& join);

  // rank_follow.cpp
  void watch_control();
  bool control_gone() const;
  // Three leases and half a minute: a standby takes over within a lease and a heartbeat.
  nanos follow_limit() const { return std::chrono::seconds(leaderless_limit_s(cfg_.control.lease_ttl_s)); }
  std::optional<int> follow_control();
  msg::rank_rejoin rejoin_request() const;
  void follow_loop();
  void tell_leaving(const msg::rank_left& left);

  // rank_commands.cpp
  std::optional<int> carry_out(rank_worker::rank_command& command);
  std::chrono::milliseconds wait_slice(time_point until) const;
  std::chrono::milliseconds remaining(time_point until) const;
  void report_checkpoint();
  int fail(const rank_worker::fail_job& f);
  int leave(const rank_worker::leave_job& l);

  // rank_memory_report.cpp
  uint64_t send_memory_sample();
  void report_fit(const rank_worker::rank_trainer& t, uint64_t peak_bytes);

  uint64_t steps_done() const { return tr_.trainer ? tr_.trainer->steps_done() : 0; }
  std::shared_ptr<metrics::metrics_registry> metrics_registry() const { return metrics_ ? metrics_->registry() : nullptr; }

  const config::job_config& cfg_;
  const managed_rank_options& o_;
  caf::actor_system& sys_;
  transport::transport_hub& hub_;
  transport::gateway& gw_;
  rank_worker::rank_metrics* metrics_;
  caf::actor pusher_;
  model::model_registry registry_;
  rank_worker::plan_inbox inbox_;
  rank_worker::fit_inbox fits_;                 // memory fit requests, by step
  std::optional<msg::memory_fit> fit_;          // the running step's (training thread only)
  rank_worker::fit_inbox::counts fit_counts_;   // as last added to the metrics
  // Shared with the control watcher, which may hear of the control process's end after this
  // object is gone.
  std::shared_ptr<std::atomic<bool>> lost_flag_ = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool>& control_lost_ = *lost_flag_;
  control_link link_;  // where reports go: the orchestrator while live
  // Following the job's leader (follow_control): whether and since when the control process
  // is gone and which leader to try (leader_follow), the follower thread that asks the next
  // leader to adopt this rank, the orchestrator it asked, and what it tells it.
  std::thread follower_;
  std::atomic<bool> stop_follow_{false};
  mutable std::mutex follow_mutex_;
  leader_follow follow_{{}};   // under follow_mutex_
  msg::orchestrator_actor asked_;           // under follow_mutex_
  msg::rank_rejoin snapshot_;  // under follow_mutex_
  real_clock clock_;
  std::unique_ptr<transport::ring_communicator> ring_;
  transport::gradient_communicator gradients_;  // of ring_'s epoch; its NCCL part on CUDA ranks
  int cuda_device_ = -1;                        // this rank's GPU, -1 on the CPU
  std::shared_ptr<std::pmr::memory_resource> batch_memory_;  // before tr_: outlives its batches
  training tr_;
  std::unique_ptr<rank_worker::rank_checkpointer> checkpoints_;
  std::unique_ptr<rank_worker::memory_probe> probe_;  // after batch_memory_: reads its pool
  rank_worker::sample_identity identity_;            // this rank in the current membership
  std::vector<std::string> members_;                 // of the current membership, in ring order
  rank_worker::rank_protocol protocol_;
  msg::step_record record_;  // the last step's, sent by rank 0 after the checkpoint call
};

}  // namespace msomni::apps::rank_shell
