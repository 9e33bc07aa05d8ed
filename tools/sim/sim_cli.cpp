// msomni-sim command line: the help text and the flag table (one place, so a test can
// check that every flag the parser knows is documented).
#include "sim_cli.hpp"

#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace msomni::sim {

namespace {

const char* const help = R"(msomni-sim: replay a GPU-cluster job trace through msomni's scheduler core.

usage: msomni-sim --trace FILE [options]

Traces: CSV with a header line; columns are found by name (any order, other columns
ignored), recognised by the header, read as published with no conversion:
  ITP (Microsoft ElasticFlow traces, itp/clusterNN.csv):
      job_id           job name (any text)
      submission_time  seconds since the trace's start
      duration         seconds the job ran (= its run time alone at full size)
      num_gpu          GPUs it asks for (whole number)
      ITP has no class column: classes come from --classes.
  Alibaba GPU v2023 (alibaba-gpu-v2023/pods.csv):
      job_id           pod name
      submit_time_s    seconds since the trace's start
      duration_s       seconds it ran; empty or <= 0 (never scheduled): row skipped, counted
      num_gpus         GPUs; 0 (CPU-only pod): skipped, counted; a fraction (gpu_milli
                       < 1000 pods) is rounded up to a whole GPU
      qos              LS, Guaranteed -> critical; Burstable -> regular; BE -> best_effort
      (start_time_s, end_time_s, queue_s, gpu_milli, cpu_milli, memory_mib, gpu_spec,
      priority_class, status are ignored). A qos column is read in either format.
  Node list (--node-list, e.g. alibaba-gpu-v2023/openb_node_list_gpu_node.csv):
      gpu              GPUs on the node, one node per row; rows with 0 GPUs are skipped.
  A malformed row stops the run with file:line:column.

Inputs:
  --trace FILE               job trace (required)
  --policy P                 omni | exclusive | greedy (default omni)
                               omni: prediction-based co-location, graceful preemption,
                                     run window, elastic shrink/grow
                               exclusive: strict priority order, no preemption, no sharing,
                                     no backfill
                               greedy: fill idle GPUs and idle shares without prediction,
                                     preempt on demand, no run window
  --gpus N|auto              cluster GPUs (default auto: mean demand / --target-load,
                             whole nodes, at least the largest job). With N, jobs larger
                             than the cluster are rejected and counted.
  --target-load X            load for --gpus auto (default 0.9)
  --node-list FILE           take the nodes from a node list instead of --gpus
  --gpus-per-node N          (default 8)   --nodes-per-switch N   (default 4)
  --seed S                   seeds class assignment and every model draw (default 1)
  --classes RULE             auto (trace qos if present, else 0.2,0.4,0.4) | trace |
                             C,R,B  fractions of critical, regular, best-effort, drawn per
                             job from the seeded stream "sim.classes" |
                             size[:BIG,SMALL]  a job of >= --gpus-per-node GPUs is
                             critical with probability BIG (0.8), a smaller one with SMALL
                             (0.1); the rest half regular, half best-effort (same stream)
  --max-jobs N               only the first N jobs (in submission order) of the slice
  --start-s T / --end-s T    only jobs submitted in [T, T') (trace seconds)
  Job durations are replayed in full (no cap).
Outputs:
  --out FILE                 JSON summary (default: stdout)
  --timeline FILE            timeline CSV: t_s, allocated_gpus, jobs_holding_gpus, guests,
                             pending, draining
  --timeline-step-s S        one timeline row per S simulated seconds (default 3600)
Scheduler ([scheduler] defaults):
  --idle-threshold X (0.35)  --safety-factor A (2.0)  --min-confidence C (0.5)
  --drain-s S (600)          --min-run-window-s S (7200)  --reservation-window-s S (1800)
  --critical-peak-memory-s S (604800)  omni's reserve for critical jobs: a regular job
                             locks GPUs (its run window) only where they fit beside F x
                             the peak critical demand of the last S seconds; past that it
                             borrows them on best-effort terms (gives them back at once);
                             0 = no reserve
  --critical-reserve-factor F (2.0)  that multiple of the peak
  --critical-slowdown-budget X (0.01)  omni: a critical job whose guests have cost it more
                             than this share of its run so far (the simulator reports each
                             host's exact loss) lends nothing until it is back under it
  --queue-capacity N (1024)  --step-window N (200)
Critical-job step timeline (uniform per job; see docs/simulator_assumptions.md):
  --step-s MIN,MAX (20,60)   --bubble MIN,MAX (0.10,0.30)   --data-wait MIN,MAX (0.05,0.25)
  --jitter CV (0.03)         --data-wait-cv CV (0.5)
  --checkpoint-every-s S (7200)  --checkpoint-s MIN,MAX (60,300)
  --eval-every-s S (3600)        --eval-s MIN,MAX (60,300)
                             phases come every round(S / mean step) steps, as a training
                             loop schedules them; a phase closes its step
Preemption cost model:
  --victim-checkpoint-s MIN,MAX (30,180)  time a victim needs for its drain checkpoint
  --unresponsive-p P (0.02)  chance a victim never answers (forced at the drain deadline)
  --periodic-checkpoint-s S (1800)  preemptible jobs' own checkpoint interval
  --restart-s S (60)         reload time before a resumed job progresses
  --share-efficiency X (0.8) guest progress per lent GPU-second
  --help, -h                 this text
)";

bool pair_of(const std::string& v, double& a, double& b) {
  return std::sscanf(v.c_str(), "%lf,%lf", &a, &b) == 2 && a <= b;
}

using setter = std::function<bool(const std::string&)>;

std::vector<std::pair<std::string, setter>> flag_table(sim_options& o) {
  auto& tl = o.timeline;
  auto& sp = o.sched;
  auto d = [](double& x) { return setter([&x](const std::string& v) { x = std::stod(v); return true; }); };
  auto u = [](auto& x) {
    return setter([&x](const std::string& v) { x = static_cast<std::remove_reference_t<decltype(x)>>(std::stoull(v)); return true; });
  };
  auto s = [](std::string& x) { return setter([&x](const std::string& v) { x = v; return true; }); };
  auto p = [](double& a, double& b) { return setter([&a, &b](const std::string& v) { return pair_of(v, a, b); }); };
  return {
      {"--trace", s(o.trace_path)}, {"--node-list", s(o.node_list_path)}, {"--out", s(o.out_path)},
      {"--timeline", s(o.timeline_path)}, {"--classes", s(o.classes)},
      {"--policy", [&](const std::string& v) { return sched::parse_policy(v, o.policy); }},
      {"--gpus", [&](const std::string& v) { o.gpus = v == "auto" ? 0 : static_cast<uint32_t>(std::stoul(v)); return true; }},
      {"--target-load", d(o.target_load)}, {"--gpus-per-node", u(o.gpus_per_node)},
      {"--nodes-per-switch", u(o.nodes_per_switch)}, {"--seed", u(o.seed)}, {"--max-jobs", u(o.max_jobs)},
      {"--start-s", d(o.window_start_s)}, {"--end-s", d(o.window_end_s)},
      {"--idle-threshold", d(sp.idle_threshold)}, {"--safety-factor", d(o.safety_factor)},
      {"--min-confidence", d(sp.min_confidence)}, {"--drain-s", d(sp.drain_period_s)},
      {"--min-run-window-s", d(sp.min_run_window_s)}, {"--reservation-window-s", d(sp.reservation_window_s)},
      {"--critical-peak-memory-s", d(sp.critical_peak_memory_s)},
      {"--critical-reserve-factor", d(sp.critical_reserve_factor)},
      {"--critical-slowdown-budget", d(sp.critical_slowdown_budget)},
      {"--queue-capacity", u(sp.queue_capacity)}, {"--step-window", u(o.step_window)},
      {"--step-s", p(tl.step_min_s, tl.step_max_s)}, {"--bubble", p(tl.bubble_min, tl.bubble_max)},
      {"--data-wait", p(tl.data_wait_min, tl.data_wait_max)}, {"--jitter", d(tl.jitter)},
      {"--data-wait-cv", d(tl.data_wait_cv)}, {"--checkpoint-every-s", d(tl.checkpoint_every_s)},
      {"--checkpoint-s", p(tl.checkpoint_min_s, tl.checkpoint_max_s)}, {"--eval-every-s", d(tl.eval_every_s)},
      {"--eval-s", p(tl.eval_min_s, tl.eval_max_s)},
      {"--victim-checkpoint-s", p(o.victim_checkpoint_min_s, o.victim_checkpoint_max_s)},
      {"--unresponsive-p", d(o.unresponsive_probability)}, {"--periodic-checkpoint-s", d(o.periodic_checkpoint_s)},
      {"--restart-s", d(o.restart_s)}, {"--share-efficiency", d(o.share_efficiency)},
      {"--timeline-step-s", d(o.timeline_step_s)},
  };
}

}  // namespace

const char* help_text() { return help; }

std::vector<std::string> flag_names() {
  sim_options scratch;
  std::vector<std::string> names;
  for (const auto& [name, set] : flag_table(scratch)) names.push_back(name);
  return names;
}

int parse_cli(int argc, const char* const* argv, sim_options& o, std::ostream& out, std::ostream& err) {
  auto flags = flag_table(o);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      out << help;
      return 0;
    }
    bool known = false;
    for (auto& [name, set] : flags) {
      if (a != name) continue;
      known = true;
      bool ok = false;
      try {
        ok = i + 1 < argc && set(argv[++i]);
      } catch (const std::exception&) {
        ok = false;
      }
      if (!ok) {
        err << "msomni-sim: bad value for " << a << " (see --help)\n";
        return 2;
      }
    }
    if (!known) {
      err << "msomni-sim: unknown option " << a << " (see --help)\n";
      return 2;
    }
  }
  if (o.trace_path.empty()) {
    err << "msomni-sim: --trace FILE is required (see --help)\n";
    return 2;
  }
  if (o.sched.reservation_window_s <= 0) {
    err << "msomni-sim: --reservation-window-s must be positive\n";
    return 2;
  }
  if (o.sched.critical_reserve_factor < 0) {
    err << "msomni-sim: --critical-reserve-factor must not be negative\n";
    return 2;
  }
  if (!(o.sched.critical_slowdown_budget >= 0) || o.sched.critical_slowdown_budget > 1) {
    err << "msomni-sim: --critical-slowdown-budget must be in [0, 1]\n";
    return 2;
  }
  return -1;
}

}  // namespace msomni::sim
