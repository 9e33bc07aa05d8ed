// The message catalog: every message type that crosses an actor boundary, declared once and
// given a CAF type ID here. register_catalog() adds all of them to an actor system; the
// round-trip test walks the same ID block, so a type is registered iff it is listed here.
// Adding a message: declare its struct in a *_messages.hpp (plain C++, no CAF: pure cores
// include those), its inspect overload in the *_messages_inspect.hpp beside it, add
// CAF_ADD_TYPE_ID below, add a sample to tests/runtime/catalog_samples.hpp. A translation
// unit that sends or receives catalog messages includes this header, so it sees every
// inspect overload.
#pragma once

#include "messages/cluster_job_messages_inspect.hpp"
#include "messages/control_messages_inspect.hpp"
#include "messages/data_messages_inspect.hpp"
#include "messages/metrics_messages_inspect.hpp"
#include "messages/scheduling_messages_inspect.hpp"
#include "messages/training_messages_inspect.hpp"

#include <caf/type_id.hpp>

namespace caf {
class actor_system_config;
}

CAF_BEGIN_TYPE_ID_BLOCK(msomni, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(msomni, (msomni::msg::heartbeat))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rank_ready))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::join_world))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rank_stalled))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rank_left))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::scale_request))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::scale_reply))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::step_record))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::checkpoint_done))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::credit_grant))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::source_cursor))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::preempt_notice))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_released))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::memory_sample))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::memory_advice))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::memory_fit))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::memory_fit_done))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::stage_pressure))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::agent_hello))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::spawn_rank))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::stop_rank))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rank_exited))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::control_request))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::control_reply))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_submit))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_step_report))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_finished))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_command))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::scheduler_status_request))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::scheduler_status))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_rejoin))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::scheduler_job_row))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::bad_sample_count))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rank_failed))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::metric_series))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::metric_family_series))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::metrics_report))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::batch_features))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::job_memory_report))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::node_check_request))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::node_check_report))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::node_pair_probe))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::node_pair_result))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::agent_signalled))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rank_rejoin))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::rejoin_answer))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::bad_sample_seen))
CAF_ADD_TYPE_ID(msomni, (msomni::msg::bad_samples_seen))
CAF_END_TYPE_ID_BLOCK(msomni)

namespace msomni {

// Adds every catalog type to `cfg` (call once, before constructing the actor system).
void register_catalog(caf::actor_system_config& cfg);

// How the scheduler threads of a process behave beside its own working thread (a rank's
// training thread). poll: CAF's work stealing, which polls (100 tries at once, then 500 50-us
// sleeps) before it sleeps for long, so actors that wake every few milliseconds keep idle
// threads spinning. park: the sharing policy parks idle threads on a condition variable, and
// the threads run SCHED_BATCH, so a message that wakes one (a batch handed back) does not
// preempt the working thread at once; they keep their fair share of the CPU. wake: the
// sharing policy's parked threads at normal priority, so a message wakes one at once: the
// control plane's processes, whose work is answering messages soon (work stealing's 50-us
// sleeps, stretched by the kernel's timer slack, cost a request/response about 45 us per hop
// on 2 cores).
enum class idle_threads { poll, park, wake };

// The actor system every msomni process runs: the catalog registered, `threads` scheduler
// threads, and CAF's own console logger quiet (processes print what they mean to).
caf::actor_system_config& configure_process(caf::actor_system_config& cfg, size_t threads,
                                            idle_threads idle = idle_threads::poll);

// Number of types in the catalog.
constexpr size_t catalog_size = caf::id_block::msomni::end - caf::id_block::msomni::begin;

}  // namespace msomni
