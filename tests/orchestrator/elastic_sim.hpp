// A deterministic simulation of one elastic job around the real elastic_core: simulated node
// agents and rank processes whose elastic protocol is the ranks' own core
// (rank_worker::rank_protocol: ready, plans, the barrier at the step after rank 0 sees a newer
// plan, rollback plans that supersede the running epoch, stalls when a peer of the epoch dies,
// waits with deadlines, leaving or failing with a reason; the harness plays the rank's shell:
// its plan inbox, ring, steps and checkpoints), on a simulated
// clock with a delay on every message (per sender-receiver order kept, as UCX and CAF keep
// it; messages to or from a dead process are lost). Seeded faults: rank deaths at any moment
// (mid-step, mid-barrier, mid-scale, while starting), agent deaths, agents that go silent
// (the node hangs: no heartbeats, its ranks stop answering, nobody reports them down; the
// core must find it by the silence alone; later the agent may heartbeat again, which must
// not revive it), ranks that die before ready, scale requests and a stop at random times. The harness plays the orchestrator
// shell's part too (records of epochs before the last rollback plan are dropped).
//
// After every event it checks the invariants; a run ends when the core finishes the job or
// the simulated time runs out (a hang). Everything derives from the run's seed, so a failing seed
// replays exactly.
#pragma once

#include "elastic_core.hpp"

#include "core/rng.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace msomni::orchestrator::sim {

struct options {
  uint64_t seed = 1;
  int nodes = 3;
  int slots = 2;  // per node
  elastic_settings job;
  uint64_t checkpoint_interval = 5;
  int64_t step_ms = 40;
  int64_t horizon_ms = 600'000;  // the job must finish or fail by then
  double rank_kills = 2;         // expected rank deaths over a run
  double agent_kill_chance = 0.15;
  double agent_silence_chance = 0.15;  // an agent goes silent (see above)
  int64_t heartbeat_ms = 200;          // every live agent's heartbeat interval
  // How long a rank waits for its first plan, an announced plan and a plan after a stall
  // (rank_protocol_settings; past the horizon a wait never ends).
  nanos first_plan_wait = std::chrono::seconds(600), announced_plan_wait = std::chrono::seconds(30),
        stalled_plan_wait = std::chrono::seconds(600);
  double start_failure_chance = 0.05;
  double scale_requests = 3;     // expected
  double stop_chance = 0.1;
  // Breaks the shell on purpose, to show the checks can fail: the first plan is sent with its
  // first member twice.
  bool sabotage_duplicate_member = false;
  // Breaks the shell on purpose the other way: heartbeats are not handed to the core, so it
  // declares agents down that are alive.
  bool sabotage_drop_heartbeats = false;
  // Breaks the ranks' side on purpose: the epoch rank 0 announces in a step's statistics
  // reaches rank 0 alone, so the others never switch at the barrier (the job hangs).
  bool sabotage_announce_to_rank0_only = false;
  // Every rank that completes this step gives up on checkpoints there (its saves kept failing)
  // and leaves failed, as a real rank does; 0: never.
  uint64_t checkpoint_give_up_step = 0;
  bool trace = false;  // keep a line per journal event, plan, death and step record in result::trace
};

struct result {
  bool finished = false;  // the core ended the job
  bool ok = false;
  std::string reason;
  std::vector<std::string> violations;
  uint64_t events = 0, plans = 0, rollbacks = 0, deaths = 0, scale_requests = 0, silences = 0;
  uint64_t last_step = 0;
  uint64_t records_late_at_finish = 0;  // see run(): the last record in flight when the job ended
  uint64_t rank_failures = 0;  // ranks whose protocol gave up (a wait ran out) and said why
  std::vector<std::string> trace;
};

result run(const options& o);

// Options for seed `seed`: 2-4 replicas of a batch that divides by 1..4, faults as above,
// agents declared down after 1 s without a heartbeat; in one seed in five the ranks wait only
// 0.2-2 s for a plan (10-200 ms for an announced one), so that their protocol gives up too.
options seeded(uint64_t seed);

}  // namespace msomni::orchestrator::sim
