// The rank's memory samples to the control process. After every optimizer step the training
// thread sends one (step_ended: the step's exact peak and what is held at its end, with the
// step's batch and the upcoming ones). While a step runs, a small actor of the rank's actor
// system (a timer, not a thread of its own) sends one every memory.sample_interval_ms with the
// peak so far, at most max_in_step per step, so a step that runs long cannot flood the
// control process; between steps the timer sleeps. Both read the backend's memory_account,
// which counts every allocation.
//
//   idle --step_started (wakes the timer)--> in step: a sample every interval, at most
//        max_in_step --step_ended / step_aborted--> idle (the next tick puts the timer to sleep)
#pragma once

#include "memory/memory_account.hpp"
#include "messages/actor_interfaces.hpp"
#include "messages/scheduling_messages.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace msomni::rank_worker {

// Who sends: the rank process and its place in the current membership.
struct sample_identity {
  std::string name;
  uint64_t epoch = 0;
  uint32_t rank = 0;
  uint32_t world_size = 0;
};

struct memory_probe_settings {
  std::chrono::microseconds interval{100'000};  // memory.sample_interval_ms
  uint32_t max_in_step = 100;               // in-step samples per step at most
};

class memory_probe {
 public:
  // Samples go to `orchestrator`; `batch_memory` is the rank's batch pool (null: none counted).
  memory_probe(caf::actor_system& sys, msg::orchestrator_actor orchestrator, std::shared_ptr<kernels::memory_account> account,
               std::shared_ptr<std::pmr::memory_resource> batch_memory, memory_probe_settings settings);
  ~memory_probe();  // stops the timer actor
  memory_probe(const memory_probe&) = delete;
  memory_probe& operator=(const memory_probe&) = delete;

  // Samples go to `orchestrator` from now on (a new leader adopted the rank).
  void send_to(msg::orchestrator_actor orchestrator);

  // The data pipeline's batch pool changed (a rank rebuilt from scratch makes a new one).
  void use_batch_memory(std::shared_ptr<std::pmr::memory_resource> batch_memory);

  // The training thread, around each optimizer step.
  void step_started(const sample_identity& who, uint64_t step);
  // Ends the step's in-step samples and sends its sample: the account's peak is taken (the
  // next step's peak starts at what is held now). Returns what was sent.
  msg::memory_sample step_ended(const msg::batch_features& batch, std::vector<msg::batch_features> upcoming);

  // The step did not finish (a lost peer, an error): no more in-step samples for it.
  void step_aborted();

  // What the timer sends while a step runs; null when no step runs or the step had its share.
  std::optional<msg::memory_sample> in_step_sample() { return state_->in_step_sample(); }

 private:
  // Shared with the timer actor, which may still run a tick while this object goes.
  struct state {
    msg::orchestrator_actor orchestrator;  // under mutex
    std::shared_ptr<kernels::memory_account> account;
    std::shared_ptr<std::pmr::memory_resource> batch_memory;
    memory_probe_settings settings;
    std::mutex mutex;
    sample_identity who;
    uint64_t step = 0;
    bool in_step = false;
    uint32_t sent_in_step = 0;
    msg::memory_sample base_sample(bool in_step) const;  // the lock held
    std::optional<msg::memory_sample> in_step_sample();
  };
  std::shared_ptr<state> state_;
  caf::actor timer_;
};

}  // namespace msomni::rank_worker
