// Typed actor interfaces: the messages each concern's actor accepts, in one place.
// Shells implement these; senders hold these handles, so a wrong message fails to compile.
#pragma once

#include "messages/catalog.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace msomni {

// The control process's membership and elasticity authority.
using orchestrator_actor = caf::typed_actor<
    caf::reacts_to<msg::heartbeat>, caf::reacts_to<msg::rank_ready>,
    caf::reacts_to<msg::decommissioned>, caf::reacts_to<msg::step_record>,
    caf::reacts_to<msg::peer_down>, caf::reacts_to<msg::checkpoint_done>,
    caf::replies_to<msg::scale_request>::with<msg::scale_reply>>;

// One data-parallel rank's training loop.
using rank_worker_actor =
    caf::typed_actor<caf::reacts_to<msg::join_world>, caf::reacts_to<msg::decommission>,
                     caf::reacts_to<msg::checkpoint_request>>;

// Per-rank asynchronous checkpoint writer.
using checkpoint_writer_actor = caf::typed_actor<caf::reacts_to<msg::checkpoint_request>>;

// A data stage that sends downstream only while it holds credits.
using data_stage_actor =
    caf::typed_actor<caf::reacts_to<msg::credit_grant>, caf::reacts_to<msg::downgrade_notice>>;

// Co-location scheduler.
using scheduler_actor =
    caf::typed_actor<caf::reacts_to<msg::step_record>, caf::reacts_to<msg::job_released>,
                     caf::reacts_to<msg::memory_advice>>;

// VRAM watermark predictor.
using vram_predictor_actor = caf::typed_actor<caf::reacts_to<msg::memory_sample>>;

}  // namespace msomni
