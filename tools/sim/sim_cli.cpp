// msomni-sim command line: one CLI11 app holds every flag, its range and its help, so the
// help is generated from the same table the parser uses.
#include "sim_cli.hpp"

#include "core/command_line.hpp"

#include <cstdio>
#include <memory>
#include <string>

namespace msomni::sim {

namespace {

namespace limits = config::limits;
namespace sl = limits::scheduler;
using command_line::add_number;
using command_line::within;

// The simulator's own flags (no config key).
constexpr limits::range<double> target_load_limit{0.01, 10.0};
constexpr limits::range<double> trace_time_s{0.0, 1e12};   // --start-s, --end-s
constexpr limits::range<double> duration_s{0.0, 1e9};      // phase lengths and intervals; 0: never
constexpr limits::range<double> step_s{0.001, 86400.0};    // a mean step time
constexpr limits::range<double> share{0.0, 1.0};           // a fraction of a step or a chance
constexpr limits::range<double> variation{0.0, 10.0};      // a coefficient of variation
constexpr limits::range<double> timeline_step_limit_s{1.0, 1e9};
constexpr limits::range<uint64_t> any_count{0, UINT64_MAX};

const char* const traces_help = R"(Traces: CSV with a header line; columns are found by name (any order, other columns
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
Job durations are replayed in full (no cap). Critical jobs' step timelines are drawn
uniformly per job; see docs/simulator_assumptions.md.
Exit codes: 0 done, 1 the trace or an output could not be used, 2 a bad command line.)";

// "MIN,MAX" within `limit`, MIN <= MAX, into a and b.
void add_pair(CLI::App& app, const std::string& flag, double& a, double& b, limits::range<double> limit,
              const std::string& what) {
  char shown[64];
  std::snprintf(shown, sizeof shown, "%g,%g", a, b);
  const auto half = within(limit);
  app.add_option_function<std::string>(
         flag,
         [&a, &b](const std::string& v) {
           const auto comma = v.find(',');
           a = std::stod(v.substr(0, comma));
           b = std::stod(v.substr(comma + 1));
         },
         what)
      ->type_name("MIN,MAX")
      ->default_str(shown)
      ->check(
          [half](const std::string& v) -> std::string {
            const auto comma = v.find(',');
            if (comma == std::string::npos) return "\"" + v + "\" is not MIN,MAX";
            std::string lo = v.substr(0, comma), hi = v.substr(comma + 1);
            if (auto why = half(lo); !why.empty()) return "MIN " + why;
            if (auto why = half(hi); !why.empty()) return "MAX " + why;
            if (std::stod(lo) > std::stod(hi)) return "MIN " + lo + " is above MAX " + hi;
            return {};
          },
          half.get_description());
}

void add_inputs(CLI::App& app, sim_options& o) {
  app.add_option("--trace", o.trace_path, "job trace (required; formats below)")->type_name("FILE")->required();
  app.add_option_function<std::string>(
         "--policy", [&o](const std::string& v) { sched::parse_policy(v, o.policy); },
         "omni: prediction-based co-location, graceful preemption, run window, elastic shrink/grow\n"
         "exclusive: strict priority order, no preemption, no sharing, no backfill\n"
         "greedy: fill idle GPUs and idle shares without prediction, preempt on demand, no run window")
      ->check(CLI::IsMember({"omni", "exclusive", "greedy"}))
      ->default_str("omni");
  const auto gpus = within(limits::cluster::gpus);
  app.add_option_function<std::string>(
         "--gpus", [&o](const std::string& v) { o.gpus = v == "auto" ? 0 : static_cast<uint32_t>(std::stoul(v)); },
         "cluster GPUs; auto: mean demand / --target-load, whole nodes, at least the largest job.\n"
         "With N, jobs larger than the cluster are rejected and counted.")
      ->type_name("N|auto")
      ->default_str("auto")
      ->check([gpus](const std::string& v) { return v == "auto" ? std::string() : gpus(v); },
              gpus.get_description());
  add_number(app, "--target-load", o.target_load, target_load_limit, "load for --gpus auto");
  app.add_option("--node-list", o.node_list_path, "take the nodes from a node list instead of --gpus")
      ->type_name("FILE");
  add_number(app, "--gpus-per-node", o.gpus_per_node, limits::cluster::gpus_per_node, "GPUs per node");
  add_number(app, "--nodes-per-switch", o.nodes_per_switch, limits::cluster::nodes_per_switch,
             "nodes under one switch");
  add_number(app, "--seed", o.seed, any_count, "seeds class assignment and every model draw");
  app.add_option("--classes", o.classes,
                 "auto (trace qos if present, else 0.2,0.4,0.4) | trace |\n"
                 "C,R,B: fractions of critical, regular, best-effort, drawn per job from the seeded\n"
                 "stream \"sim.classes\" |\n"
                 "size[:BIG,SMALL]: a job of >= --gpus-per-node GPUs is critical with probability BIG\n"
                 "(0.8), a smaller one with SMALL (0.1); the rest half regular, half best-effort (same stream)")
      ->type_name("RULE")
      ->capture_default_str();
  add_number(app, "--max-jobs", o.max_jobs, any_count,
             "only the first N jobs (in submission order) of the slice; 0: all");
  app.add_option("--start-s", o.window_start_s, "only jobs submitted at or after T (trace seconds)")
      ->type_name("T")
      ->transform(within(trace_time_s));
  app.add_option("--end-s", o.window_end_s, "only jobs submitted before T (trace seconds)")
      ->type_name("T")
      ->transform(within(trace_time_s));
}

void add_outputs(CLI::App& app, sim_options& o) {
  app.add_option("--out", o.out_path, "the JSON summary, or --compare's table (default: stdout)")->type_name("FILE");
  auto* compare = app.add_flag("--compare", o.compare,
                               "run omni, exclusive and greedy on the same trace and seed and print one table:\n"
                               "utilisation, free GPUs while jobs waited, critical slowdown and queue wait,\n"
                               "JCT per class, preemptions, shrinks, co-locations, lost GPU-hours");
  app.add_flag("--json", o.json, "with --compare: the three JSON summaries under \"policies\" instead of the table")
      ->needs(compare);
  compare->excludes(app.get_option("--policy"));
  app.add_option("--timeline", o.timeline_path,
                 "timeline CSV: t_s, allocated_gpus, jobs_holding_gpus, guests, pending, draining")
      ->type_name("FILE");
  add_number(app, "--timeline-step-s", o.timeline_step_s, timeline_step_limit_s,
             "one timeline row per S simulated seconds");
  app.get_option("--compare")->excludes(app.get_option("--timeline"));
}

// Scheduler flags set what the [scheduler] keys set, within the same limits.
void add_scheduler(CLI::App& app, sim_options& o) {
  auto& sp = o.sched;
  add_number(app, "--idle-threshold", sp.idle_threshold, sl::idle_threshold,
             "co-locate only where the predicted idle share passes it");
  add_number(app, "--safety-factor", o.safety_factor, sl::safety_factor, "the step predictor's safety factor");
  add_number(app, "--min-confidence", sp.min_confidence, sl::min_confidence,
             "... and only where the predictor is at least this sure");
  add_number(app, "--drain-s", sp.drain_period_s, sl::drain_period_s,
             "seconds from a regular job's preemption notice to its forced release");
  add_number(app, "--min-run-window-s", sp.min_run_window_s, sl::min_run_window_s,
             "seconds a regular job runs before it may be preempted");
  add_number(app, "--reservation-window-s", sp.reservation_window_s, sl::reservation_window_s,
             "co-location is decided per window of this many seconds");
  add_number(app, "--critical-peak-memory-s", sp.critical_peak_memory_s, sl::critical_peak_memory_s,
             "omni's reserve for critical jobs: a regular job locks GPUs (its run window) only where\n"
             "they fit beside F x the peak critical demand of the last S seconds; past that it borrows\n"
             "them on best-effort terms (gives them back at once); 0 = no reserve");
  add_number(app, "--critical-reserve-factor", sp.critical_reserve_factor, sl::critical_reserve_factor,
             "F: that multiple of the peak");
  add_number(app, "--critical-slowdown-budget", sp.critical_slowdown_budget, sl::critical_slowdown_budget,
             "omni: a critical job whose guests have cost it more than this share of its run so far\n"
             "(the simulator reports each host's exact loss) lends nothing until it is back under it");
  add_number(app, "--queue-capacity", sp.queue_capacity, sl::queue_capacity,
             "pending jobs; submissions past it are rejected");
  add_number(app, "--step-window", o.step_window, sl::step_window, "steps the step predictor looks back over");
}

void add_timeline(CLI::App& app, sim_options& o) {
  auto& tl = o.timeline;
  add_pair(app, "--step-s", tl.step_min_s, tl.step_max_s, step_s, "a critical job's mean step time, seconds");
  add_pair(app, "--bubble", tl.bubble_min, tl.bubble_max, share, "pipeline-bubble share of compute");
  add_pair(app, "--data-wait", tl.data_wait_min, tl.data_wait_max, share, "mean data-wait share of a step");
  add_number(app, "--jitter", tl.jitter, variation, "step-time coefficient of variation");
  add_number(app, "--data-wait-cv", tl.data_wait_cv, variation, "per-step variation of the data wait");
  add_number(app, "--checkpoint-every-s", tl.checkpoint_every_s, duration_s,
             "seconds of job progress between checkpoints; 0: none");
  add_pair(app, "--checkpoint-s", tl.checkpoint_min_s, tl.checkpoint_max_s, duration_s,
           "seconds a checkpoint takes");
  add_number(app, "--eval-every-s", tl.eval_every_s, duration_s,
             "seconds of job progress between evaluations; 0: none.\n"
             "Phases come every round(S / mean step) steps, as a training loop schedules them;\n"
             "a phase closes its step");
  add_pair(app, "--eval-s", tl.eval_min_s, tl.eval_max_s, duration_s, "seconds an evaluation takes");
}

void add_preemption(CLI::App& app, sim_options& o) {
  add_pair(app, "--victim-checkpoint-s", o.victim_checkpoint_min_s, o.victim_checkpoint_max_s, duration_s,
           "time a victim needs for its drain checkpoint");
  add_number(app, "--unresponsive-p", o.unresponsive_probability, share,
             "chance a victim never answers (forced at the drain deadline)");
  add_number(app, "--periodic-checkpoint-s", o.periodic_checkpoint_s, duration_s,
             "preemptible jobs' own checkpoint interval; 0: none");
  add_number(app, "--restart-s", o.restart_s, duration_s, "reload time before a resumed job progresses");
  add_number(app, "--share-efficiency", o.share_efficiency, share, "guest progress per lent GPU-second");
}

std::unique_ptr<CLI::App> make_app(sim_options& o) {
  auto app = std::make_unique<CLI::App>(
      "msomni-sim: replay a GPU-cluster job trace through msomni's scheduler core.", "msomni-sim");
  command_line::set_conventions(*app);
  app->set_help_flag("-h,--help", "this text");
  app->get_formatter()->column_width(36);
  app->footer(traces_help);
  const std::pair<const char*, void (*)(CLI::App&, sim_options&)> groups[] = {
      {"Inputs", add_inputs},
      {"Outputs", add_outputs},
      {"Scheduler ([scheduler] keys, same limits)", add_scheduler},
      {"Critical-job step timeline", add_timeline},
      {"Preemption cost model", add_preemption},
  };
  for (const auto& [name, add] : groups) {
    app->option_defaults()->group(name);
    add(*app, o);
  }
  return app;
}

}  // namespace

std::string help_text() {
  sim_options scratch;
  return make_app(scratch)->help();
}

std::vector<std::string> flag_names() {
  sim_options scratch;
  const auto app = make_app(scratch);
  std::vector<std::string> names;
  for (const auto* opt : app->get_options())
    for (const auto& name : opt->get_lnames()) names.push_back("--" + name);
  return names;
}

int parse_cli(int argc, const char* const* argv, sim_options& o, std::ostream& out, std::ostream& err) {
  const auto app = make_app(o);
  if (const auto rc = command_line::parse(*app, argc, argv, out, err)) return *rc;
  return -1;
}

}  // namespace msomni::sim
