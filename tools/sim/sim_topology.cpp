// msomni-sim: the simulated cluster -- from a node list, from --gpus, or sized from the
// trace's demand -- and the scheduler parameters of the policy under test.
#include "sim_state.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace msomni::sim {

using namespace msomni::sched;

topology engine::make_topology(const sim_options& opt, const trace& tr, sim_result& r) {
  if (!opt.node_list_path.empty()) {
    topology t;
    t.node_gpus = read_node_list(opt.node_list_path);
    t.nodes_per_switch = opt.nodes_per_switch;
    r.size_rule = "node list " + opt.node_list_path;
    return t;
  }
  if (opt.gpus > 0) {
    r.size_rule = "--gpus";
    return topology::uniform(opt.gpus, opt.gpus_per_node, opt.nodes_per_switch);
  }
  // Auto size: the trace's mean GPU demand over its submission span at the target load,
  // rounded up to whole nodes, never smaller than its largest job. One rule for every trace.
  double demand = 0, first = 0, last = 0, biggest = 1;
  for (size_t i = 0; i < tr.jobs.size(); ++i) {
    demand += tr.jobs[i].duration_s * tr.jobs[i].gpus;
    if (i == 0) first = tr.jobs[i].submit_s;
    last = tr.jobs[i].submit_s;
    biggest = std::max<double>(biggest, tr.jobs[i].gpus);
  }
  double span = std::max(last - first, 3600.0);
  double g = std::max(biggest, std::ceil(demand / span / opt.target_load));
  uint32_t per = std::max<uint32_t>(1, opt.gpus_per_node);
  uint32_t gpus = static_cast<uint32_t>(std::ceil(g / per)) * per;
  r.size_rule = "auto: ceil(sum(duration*gpus) / submit span / " + std::to_string(opt.target_load) +
                ") to whole nodes";
  return topology::uniform(gpus, per, opt.nodes_per_switch);
}

scheduler_params engine::with_policy(const sim_options& opt) {
  scheduler_params p = opt.sched;
  p.policy = opt.policy;
  return p;
}

}  // namespace msomni::sim
