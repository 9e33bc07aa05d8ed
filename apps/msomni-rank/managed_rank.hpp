// A rank process driven by the orchestrator (how msomni-run and msomni-agent start ranks):
// it joins the control process over UCX, warms up by loading and verifying the newest
// checkpoint, reports ready, and then follows membership plans (join_world):
//
//   ready --plan--> apply: connect to the members, build the ring of the plan's epoch, set
//          grad_accum and the data slot, then take the state (newest checkpoint, or a
//          broadcast from members[0] for a rank joining a live job)
//   training --rank 0 announces a newer epoch in a step's statistics--> barrier: commit the
//          running checkpoint (a verified one first when the plan asks), then apply or leave
//   training --a collective fails (peer died/silent)--> stalled: report, wait for a plan
//   last step --> final checkpoint, rank_left "finished"
//   [control] store, the control process gone --> training goes on; the next leader named in
//          control.json is asked to adopt the rank (rank_rejoin): adopted, the rank reports
//          to it (the kept step records first); refused, it leaves (control_link.hpp)
// The protocol's decisions (which plan to take, when to leave, stall or fail, and the waits'
// deadlines) are rank_worker::rank_protocol's (actors/rank_worker/rank_protocol.hpp); this
// shell carries them out.
#pragma once

#include "config/job_config.hpp"

#include <string>
#include <vector>

namespace msomni::apps {

struct managed_rank_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string name;
  std::string node = "local";
  std::string control;  // host:port of the control process
  std::string ckpt_dir;
  std::string token;    // the job's secret: proved to the control process and to every peer
  // [control] store: the job's control.json. When the control process goes, the rank trains
  // on and asks the next leader that file names to adopt it (control_follower.hpp); empty:
  // the rank ends with its control process.
  std::string follow_control;
};

// Exit codes: 0 left cleanly (finished, decommissioned or stopped), 1 failure.
int run_managed_rank(const config::job_config& cfg, const managed_rank_options& opts);

}  // namespace msomni::apps
