// register_catalog: one call adds every catalog type to an actor system config.
#include "messages/catalog.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/thread_hook.hpp>

#include <sched.h>

namespace msomni {

namespace {

// Actor threads of a process whose own thread does the heavy work: SCHED_BATCH, so a message
// that wakes one does not preempt the working thread at once (Linux skips wake-up preemption
// for batch threads); they still get their fair share of the CPU.
class batch_scheduling final : public caf::thread_hook {
 public:
  void init(caf::actor_system&) override {}
  void thread_started() override {
    sched_param p{};
    ::sched_setscheduler(0, SCHED_BATCH, &p);  // best effort: a failure leaves SCHED_OTHER
  }
  void thread_terminates() override {}
};

}  // namespace

void register_catalog(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::msomni>();
}

caf::actor_system_config& configure_process(caf::actor_system_config& cfg, size_t threads, idle_threads idle) {
  register_catalog(cfg);
  cfg.set("scheduler.max-threads", threads);
  if (idle != idle_threads::poll) cfg.set("scheduler.policy", caf::atom("sharing"));
  if (idle == idle_threads::park) cfg.add_thread_hook<batch_scheduling>();
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  return cfg;
}

}  // namespace msomni
