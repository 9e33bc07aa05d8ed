// The actors other processes talk to, as typed handles: each lists the catalog messages it
// takes and what it answers. The gateway hands out and publishes only these (gateway.hpp),
// so sending an actor a message it does not take fails to compile on the sender's side, and
// an actor's typed behaviour must take every message of its interface. An actor's own timers
// (atoms it sends itself) extend its interface in its own file, invisible to the others.
#pragma once

#include "messages/catalog.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace msomni::msg {

// A job's control process, published as "orchestrator" on node "control": what ranks, node
// agents, the metrics pushers and the `msomni` commands send it.
using orchestrator_actor = caf::typed_actor<
    caf::reacts_to<agent_hello>, caf::reacts_to<agent_signalled>, caf::reacts_to<heartbeat>,
    caf::reacts_to<rank_ready>, caf::reacts_to<rank_rejoin>, caf::reacts_to<step_record>,
    caf::replies_to<rank_left>::with<bool>, caf::reacts_to<bad_samples_seen>, caf::reacts_to<checkpoint_done>,
    caf::reacts_to<rank_stalled>, caf::replies_to<rank_failed>::with<bool>, caf::reacts_to<rank_exited>,
    caf::replies_to<control_request>::with<control_reply>, caf::reacts_to<metrics_report>,
    caf::reacts_to<memory_sample>, caf::reacts_to<memory_fit>, caf::reacts_to<memory_fit_done>,
    caf::reacts_to<memory_advice>>;

// A rank process's worker, published as "worker" on the rank's node: the orchestrator's
// membership plans, memory fits and rejoin answers.
using worker_actor = caf::typed_actor<caf::reacts_to<join_world>, caf::reacts_to<memory_fit>,
                                      caf::reacts_to<rejoin_answer>, caf::reacts_to<heartbeat>>;

// A node agent, published as "agent" on its node: the orchestrator starts and stops ranks
// there and asks it to check its node.
using agent_actor = caf::typed_actor<caf::reacts_to<spawn_rank>, caf::reacts_to<stop_rank>,
                                     caf::replies_to<node_check_request>::with<node_check_report>,
                                     caf::replies_to<node_pair_probe>::with<node_pair_result>>;

// The job's memory watermark predictor, in the control process beside the orchestrator: the
// step samples the orchestrator forwards, and the ranks that are gone. It answers the sample's
// sender (an orchestrator_actor) with memory_fit and memory_advice.
using memory_predictor_actor =
    caf::typed_actor<caf::reacts_to<memory_sample>, caf::reacts_to<rank_left>, caf::reacts_to<rank_exited>>;

// The co-location scheduler, published as "scheduler-TOKEN" on node "sched": what jobs and
// `msomni sched-status` send it.
using scheduler_actor = caf::typed_actor<
    caf::reacts_to<job_submit>, caf::reacts_to<job_rejoin>, caf::reacts_to<job_step_report>,
    caf::reacts_to<job_memory_report>, caf::reacts_to<job_released>, caf::reacts_to<job_finished>,
    caf::replies_to<scheduler_status_request>::with<scheduler_status>>;

// A job as `msomni job` runs it: the scheduler's decisions about it, sent to the actor that
// submitted it.
using job_actor = caf::typed_actor<caf::reacts_to<job_command>, caf::reacts_to<preempt_notice>>;

}  // namespace msomni::msg
