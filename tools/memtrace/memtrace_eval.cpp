// `msomni-memtrace eval`: reads each trace strictly, replays it through the predictor
// line-up (make_memory_predictors) and prints the scores of memory_eval.hpp.
//
// The analytic baseline needs the model's estimate of a batch's bytes. A trace does not say
// which model ran, so the tool fits the estimate's form (fixed bytes + bytes per token,
// tokens = micro_batch x seq_len) to the peaks of the trace's first --calibration-steps
// steps; that row has therefore seen those steps' peaks.
#include "memtrace_eval.hpp"

#include "core/command_line.hpp"
#include "memory_baselines.hpp"
#include "memory_eval.hpp"
#include "memory_forecast_core.hpp"
#include "memory_trace.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace msomni::memtrace {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

struct eval_options {
  std::vector<std::string> traces;
  double margin_gb = 3.5;
  int64_t horizon = 10;
  int64_t window = 200;
  int64_t pca_dims = 16;
  int64_t calibration_steps = 20;
  bool json = false;
  bool pairs = false;  // with json: every scored step's forecast and actual
};

struct trace_result {
  std::string path;
  size_t steps = 0;
  predict::token_estimate estimate;
  std::vector<predict::predictor_score> scores;
};

std::vector<predict::memory_sample> read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw predict::memory_trace_error(path + ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw predict::memory_trace_error(path + ": read failed");
  return predict::parse_memory_trace(text, path);
}

trace_result evaluate(const eval_options& o, const std::string& path,
                      const std::vector<predict::memory_sample>& samples) {
  trace_result r;
  r.path = path;
  r.steps = samples.size();
  const size_t calib = std::min(samples.size(), static_cast<size_t>(o.calibration_steps));
  r.estimate = predict::fit_token_estimate(std::span(samples).first(calib));
  predict::memory_forecast_settings fs;
  fs.sequence_length = static_cast<size_t>(o.window);
  fs.horizon_steps = static_cast<size_t>(o.horizon);
  fs.pca_dims = static_cast<size_t>(o.pca_dims);
  auto predictors = predict::make_memory_predictors(fs, r.estimate);
  predict::memory_eval_settings es;
  es.horizon = fs.horizon_steps;
  es.margin_bytes = o.margin_gb * gib;
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  r.scores = predict::evaluate_memory_predictors(samples, predictors, es, now_ns);
  return r;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void print_table(const eval_options& o, const trace_result& r, std::ostream& out) {
  out << "trace " << r.path << ": " << r.steps << " steps, horizon " << o.horizon << ", window " << o.window
      << ", margin " << fixed(o.margin_gb, 2) << " GB, analytic estimate " << fixed(r.estimate.base_bytes / gib, 3)
      << " GB + " << fixed(r.estimate.bytes_per_token, 1) << " B/token\n";
  if (!r.scores.empty() && r.scores.front().forecasts == 0) {
    out << "  too short to score: a forecast needs " << o.horizon << " steps after it\n";
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "  %-20s %9s %9s %10s %12s %11s %12s %14s\n", "predictor", "forecasts", "mae_gb",
                "under_rate", "overhead_gb", "step_mae_gb", "observe_us", "observe_us_max");
  out << line;
  for (const auto& s : r.scores) {
    std::snprintf(line, sizeof line, "  %-20s %9zu %9.3f %10.4f %12.3f %11.3f %12.1f %14.1f\n", s.name.c_str(),
                  s.forecasts, s.mae_bytes / gib, s.under_rate, s.overhead_bytes / gib, s.step_mae_bytes / gib,
                  s.observe_ns_mean / 1e3, s.observe_ns_max / 1e3);
    out << line;
  }
}

nlohmann::ordered_json to_json(const eval_options& o, const std::vector<trace_result>& results) {
  nlohmann::ordered_json traces = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json preds = nlohmann::ordered_json::array();
    for (const auto& s : r.scores) {
      nlohmann::ordered_json at = nlohmann::ordered_json::object();
      for (const auto& [other, rate] : s.under_rate_at_overhead_of) at[other] = rate;
      preds.push_back({{"name", s.name},
                       {"forecasts", s.forecasts},
                       {"mae_bytes", s.mae_bytes},
                       {"under_rate", s.under_rate},
                       {"overhead_bytes", s.overhead_bytes},
                       {"step_mae_bytes", s.step_mae_bytes},
                       {"observe_ns_mean", s.observe_ns_mean},
                       {"observe_ns_max", s.observe_ns_max},
                       {"under_rate_at_overhead_of", at}});
      if (o.pairs) {
        auto& fa = preds.back()["forecast_actual_bytes"] = nlohmann::ordered_json::array();
        for (const auto& [f, a] : s.forecast_actual) fa.push_back({f, a});
      }
    }
    traces.push_back({{"trace", r.path},
                      {"steps", r.steps},
                      {"analytic_estimate",
                       {{"base_bytes", r.estimate.base_bytes}, {"bytes_per_token", r.estimate.bytes_per_token}}},
                      {"predictors", preds}});
  }
  return {{"horizon", o.horizon},
          {"window", o.window},
          {"pca_dims", o.pca_dims},
          {"margin_bytes", o.margin_gb * gib},
          {"traces", traces}};
}

}  // namespace

int run_eval(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  namespace limits = config::limits::memory;
  eval_options o;
  CLI::App app("msomni-memtrace eval: replay memory traces through every memory predictor and score the "
               "forecast of the next steps' peak (see docs/memory_predictor.md).",
               "msomni-memtrace eval");
  command_line::set_conventions(app);
  app.add_option("--trace", o.traces, "one or more ranks' memory traces (JSONL, docs/memory_traces.md)")
      ->required()
      ->expected(1, -1)
      ->type_name("FILE...");
  command_line::add_number(app, "--margin-gb", o.margin_gb, limits::safety_margin_gb,
                           "safety margin on top of the forecast ([memory] safety_margin_gb)");
  command_line::add_number(app, "--horizon", o.horizon, limits::horizon_steps,
                           "steps ahead to forecast ([memory] horizon_steps)");
  command_line::add_number(app, "--window", o.window, limits::sequence_length,
                           "samples each predictor keeps ([memory] sequence_length)");
  command_line::add_number(app, "--pca-dims", o.pca_dims, limits::pca_dims,
                           "the learned model's input dimensions after PCA ([memory] pca_dims)");
  command_line::add_number(app, "--calibration-steps", o.calibration_steps, config::limits::range<int64_t>{1, 1 << 20},
                           "first steps whose peaks fit the analytic estimate (bytes + bytes per token)");
  app.add_flag("--json", o.json, "one JSON document: per trace, one entry per predictor");
  app.add_flag("--pairs", o.pairs,
               "with --json: each predictor's forecast and actual peak of every scored step "
               "(forecast_actual_bytes), to compare predictors at any margin or across traces");
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  if (o.pairs && !o.json) {
    err << "msomni-memtrace eval: --pairs needs --json\n";
    return 2;
  }

  std::vector<std::vector<predict::memory_sample>> samples;
  try {
    for (const auto& path : o.traces) samples.push_back(read_trace(path));
  } catch (const predict::memory_trace_error& e) {
    err << "msomni-memtrace eval: " << e.what() << "\n";
    return 1;
  }
  std::vector<trace_result> results;
  for (size_t i = 0; i < o.traces.size(); ++i) results.push_back(evaluate(o, o.traces[i], samples[i]));
  if (o.json) {
    out << to_json(o, results).dump(2) << "\n";
  } else {
    for (size_t i = 0; i < results.size(); ++i) {
      if (i > 0) out << "\n";
      print_table(o, results[i], out);
    }
  }
  return 0;
}

}  // namespace msomni::memtrace
