// launch_plan (see launch_plan.hpp).
#include "launch_plan.hpp"

#include "core/control_file.hpp"

#include <algorithm>

namespace msomni::apps {

nlohmann::ordered_json control_file_json(const std::string& address, const std::string& token, int64_t pid,
                                         const std::string& metrics_address, const config::job_config& cfg) {
  nlohmann::ordered_json control;
  control["address"] = address;
  control["token"] = token;
  control["pid"] = pid;
  if (!metrics_address.empty()) control["metrics_address"] = metrics_address;
  if (!cfg.control.store.empty()) {
    control["store"] = cfg.control.store;
    control["job"] = cfg.job.name;
    control["follow_limit_s"] = leaderless_limit_s(cfg.control.lease_ttl_s);  // read by the node agents
  }
  return control;
}

std::vector<std::string> rank_arguments(const rank_launch& l, const std::string& rank) {
  std::vector<std::string> args{l.config_path, "--name",     rank, "--control", l.control_address,
                                "--ckpt-dir",  l.checkpoint_dir, "--follow-control", l.control_file};
  for (const auto& s : l.overrides) args.insert(args.end(), {"--set", s});
  return args;
}

nanos adopt_window_for(std::chrono::milliseconds heartbeat, int64_t misses) {
  return std::chrono::duration_cast<nanos>(heartbeat * std::max<int64_t>(1, misses) + std::chrono::seconds(5));
}

std::chrono::milliseconds heartbeat_of(const config::job_config& cfg) {
  return std::chrono::milliseconds(static_cast<int64_t>(cfg.elasticity.heartbeat_interval_s * 1000));
}

orchestrator::elastic_settings elastic_settings_from(const config::job_config& cfg, bool resume) {
  orchestrator::elastic_settings s;
  s.total_steps = static_cast<uint64_t>(cfg.training.steps);
  s.global_batch = cfg.training.global_batch;
  s.micro_batch = cfg.training.micro_batch;
  s.replicas = cfg.elasticity.replicas;
  s.min_replicas = cfg.elasticity.min_replicas;
  s.max_replicas = cfg.elasticity.max_replicas;
  s.grace_period = std::chrono::duration_cast<nanos>(std::chrono::duration<double>(cfg.elasticity.grace_period_s));
  s.resume = resume;
  s.expected_agents = static_cast<int64_t>(cfg.cluster.nodes.size());
  return s;
}

int64_t takeover_replicas(int64_t stored, const config::job_config& cfg) {
  if (stored <= 0) return cfg.elasticity.replicas;
  return std::clamp(stored, cfg.elasticity.min_replicas, cfg.elasticity.max_replicas);
}

orchestrator::autoscale_settings autoscale_settings_from(const config::job_config& cfg) {
  const auto secs = [](double s) { return std::chrono::duration_cast<nanos>(std::chrono::duration<double>(s)); };
  const auto& e = cfg.elasticity;
  return {e.autoscale,
          e.scale_up_utilization,
          secs(e.scale_up_sustain_s),
          e.scale_down_utilization,
          secs(e.scale_down_sustain_s),
          secs(e.autoscale_cooldown_s),
          secs(e.grace_period_s)};
}

orchestrator::health_settings health_settings_from(const config::job_config& cfg) {
  orchestrator::health_settings h;
  h.max_nonfinite_steps = static_cast<uint64_t>(cfg.training.max_nonfinite_steps);
  h.loss_spike_factor = cfg.training.loss_spike_factor;
  return h;
}

std::vector<std::string> agent_commands(const config::job_config& cfg, const std::string& control_address,
                                        const std::string& control_file) {
  std::vector<std::string> out;
  for (const auto& n : cfg.cluster.nodes)
    out.push_back("msomni-agent --join " + control_address + " --token-file " + control_file + " --node " + n.name +
                  " --rack " + n.rack + " --switch " + n.switch_name + " --slots " + std::to_string(n.slots));
  return out;
}

orchestrator::run_end decide_run_end(const end_inputs& in) {
  namespace o = orchestrator;
  o::run_end end;
  end.rank_crashes = in.rank_crashes;
  const bool crashed_after_result = !in.rank_crashes.empty();
  end.state = !in.ok || in.journal_failed ? "failed"
              : in.deposed               ? "deposed"
              : in.preempted             ? "preempted"
              : in.stopped               ? "stopped"
              : crashed_after_result     ? "failed"
                                         : "finished";
  end.exit_code = in.preflight_failed        ? o::exit_preflight_failed
                  : end.state == "failed"    ? o::exit_failed
                  : end.state == "deposed"   ? o::exit_deposed
                  : end.state == "preempted" ? o::exit_preempted
                  : end.state == "stopped"   ? o::exit_stopped
                                             : o::exit_finished;
  end.reason = in.journal_failed && in.ok ? in.journal_failure : in.reason;
  if (end.state == "failed" && in.ok && !in.journal_failed)  // failed only by the crash
    end.reason = "every step was trained, but " + in.rank_crashes.front() +
                 (in.rank_crashes.size() > 1 ? " (and " + std::to_string(in.rank_crashes.size() - 1) + " more)" : "");
  return end;
}

}  // namespace msomni::apps
