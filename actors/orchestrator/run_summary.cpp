// run_summary (see run_summary.hpp).
#include "run_summary.hpp"

#include "orchestrator_json.hpp"

#include "core/json_number.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace msomni::orchestrator {

namespace {

const std::set<std::string>& elastic_kinds() {
  static const std::set<std::string> kinds{
      "scale_down",  "scale_down_done",      "scale_up",         "scale_up_done", "scale_up_join",
      "autoscale",   "rank_down",            "agent_down",       "recovery",      "recovered",
      "replacement", "grace_period_expired", "scale_up_incomplete", "training_rollback",
      "recovery_replanned"};
  return kinds;
}

double rounded(double v, int digits) { return significant_digits(v, digits); }

std::string number_text(double v, const char* format) {
  char b[48];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string optional_text(const std::optional<double>& v, const char* format) {
  return v ? number_text(*v, format) : std::string("-");
}

}  // namespace

bool is_elastic_event(const std::string& kind) { return elastic_kinds().count(kind) != 0; }

void run_tally::samples::add(double v) {
  if (!std::isfinite(v)) return;
  if (seen++ % stride != 0) return;
  kept.push_back(v);
  if (kept.size() < median_samples_max) return;
  // Keep every other sample: the median of what stays is that of every 2*stride-th step.
  for (size_t i = 0; i < kept.size() / 2; ++i) kept[i] = kept[2 * i];
  kept.resize(kept.size() / 2);
  stride *= 2;
}

std::optional<double> run_tally::samples::median() const {
  if (kept.empty()) return std::nullopt;
  auto v = kept;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(v.begin(), mid);
  return (lower + upper) / 2;
}

void run_tally::on_step(const metrics_record& r) {
  ++facts_.steps_recorded;
  if (!facts_.first_step) facts_.first_step = r.step;
  if (std::isfinite(r.loss)) {
    if (!facts_.loss_first) facts_.loss_first = r.loss;
    facts_.loss_last = r.loss;
    facts_.loss_min = std::min(facts_.loss_min.value_or(r.loss), r.loss);
  }
  worlds_.insert(r.world_size);
  tokens_.add(r.tokens_per_s);
  step_ms_.add(r.step_time_ms);
  wait_ms_.add(r.data_wait_ms);
}

void run_tally::on_event(const std::string& kind) {
  if (is_elastic_event(kind)) ++facts_.elastic_events[kind];
}

void run_tally::on_checkpoint(uint64_t step, bool ok) {
  if (!ok) {
    ++facts_.checkpoint_failures;
    return;
  }
  ++facts_.checkpoints_committed;
  facts_.last_checkpoint_step = std::max(facts_.last_checkpoint_step.value_or(0), step);
}

run_facts run_tally::facts(uint64_t last_step, const std::map<std::string, uint64_t>& bad_samples,
                           uint64_t downgraded_samples, uint64_t slow_data_steps) const {
  run_facts f = facts_;
  f.last_step = last_step;
  f.world_sizes.assign(worlds_.begin(), worlds_.end());
  f.tokens_per_s_median = tokens_.median();
  f.step_time_ms_median = step_ms_.median();
  f.data_wait_ms_median = wait_ms_.median();
  f.bad_samples = bad_samples;
  f.downgraded_samples = downgraded_samples;
  f.slow_data_steps = slow_data_steps;
  return f;
}

nlohmann::ordered_json summary_json(const run_facts& f, const run_end& e) {
  using nlohmann::ordered_json;
  ordered_json j = ordered_json::object();
  j["state"] = e.state;
  j["exit_code"] = e.exit_code;
  j["reason"] = e.reason;
  j["steps"] = {{"done", f.last_step}, {"total", f.total_steps}, {"recorded", f.steps_recorded}};
  if (f.first_step) j["steps"]["first_this_run"] = *f.first_step;
  j["wall_s"] = rounded(static_cast<double>(e.ended_ms - e.started_ms) / 1000.0, 6);
  j["started_ms"] = e.started_ms;
  j["ended_ms"] = e.ended_ms;
  j["attempt"] = e.attempt;
  const auto put_opt = [](ordered_json& o, const char* key, const std::optional<double>& v, int digits) {
    if (v) o[key] = rounded(*v, digits);
    else o[key] = nullptr;
  };
  put_opt(j, "tokens_per_s_median", f.tokens_per_s_median, 6);
  put_opt(j, "step_time_ms_median", f.step_time_ms_median, 6);
  put_opt(j, "data_wait_ms_median", f.data_wait_ms_median, 6);
  auto& loss = j["loss"] = ordered_json::object();
  put_opt(loss, "first", f.loss_first, 9);
  put_opt(loss, "last", f.loss_last, 9);
  put_opt(loss, "min", f.loss_min, 9);
  j["world_sizes"] = f.world_sizes;
  j["elastic_events"] = ordered_json::object();
  for (const auto& [kind, n] : f.elastic_events) j["elastic_events"][kind] = n;
  auto& ck = j["checkpoints"] = ordered_json::object();
  ck["committed"] = f.checkpoints_committed;
  ck["failed"] = f.checkpoint_failures;
  if (f.last_checkpoint_step) ck["last_step"] = *f.last_checkpoint_step;
  else ck["last_step"] = nullptr;
  auto& resume = j["resume"] = ordered_json::object();
  if (e.resume_step) {
    resume["step"] = *e.resume_step;
    resume["checkpoint"] = e.resume_checkpoint;
  } else {
    resume["step"] = nullptr;
    resume["checkpoint"] = nullptr;
  }
  uint64_t bad = 0;
  for (const auto& [r, n] : f.bad_samples) bad += n;
  j["bad_samples"] = {{"total", bad}, {"by_reason", ordered_json::object()}};
  for (const auto& [r, n] : f.bad_samples) j["bad_samples"]["by_reason"][r] = n;
  j["bad_samples"]["samples"] = bad_sample_list_json(f.bad_sample_list);
  j["bad_samples"]["unlisted_draws"] = f.bad_samples_unlisted_draws;
  j["mismatched_names"] = f.mismatched_names;
  j["rank_crashes"] = e.rank_crashes;
  j["downgraded_samples"] = f.downgraded_samples;
  j["slow_data_steps"] = f.slow_data_steps;
  j["run_dir"] = e.run_dir;
  j["checkpoint_dir"] = e.checkpoint_dir;
  return j;
}

std::string summary_text(const run_facts& f, const run_end& e) {
  std::string t;
  const auto line = [&t](const std::string& label, const std::string& value) {
    t += label;
    t.append(label.size() < 14 ? 14 - label.size() : 1, ' ');
    t += value + "\n";
  };
  line("state", e.state + " (exit code " + std::to_string(e.exit_code) + ")");
  line("reason", e.reason);
  line("steps", std::to_string(f.last_step) + " / " + std::to_string(f.total_steps) + " (" +
                    std::to_string(f.steps_recorded) + " recorded by this run" +
                    (f.first_step ? ", from step " + std::to_string(*f.first_step) : std::string()) + ")");
  line("wall time", number_text(static_cast<double>(e.ended_ms - e.started_ms) / 1000.0, "%.1f s"));
  line("tokens/s", optional_text(f.tokens_per_s_median, "%.0f") + " (median)");
  line("step time", optional_text(f.step_time_ms_median, "%.2f ms") + " (median), data wait " +
                        optional_text(f.data_wait_ms_median, "%.2f ms") + " (median)");
  line("loss", "first " + optional_text(f.loss_first, "%.4f") + ", last " + optional_text(f.loss_last, "%.4f") +
                   ", min " + optional_text(f.loss_min, "%.4f"));
  std::string worlds;
  for (auto w : f.world_sizes) worlds += (worlds.empty() ? "" : ", ") + std::to_string(w);
  line("world sizes", worlds.empty() ? "-" : worlds);
  std::string events;
  for (const auto& [kind, n] : f.elastic_events) events += (events.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  line("elastic", events.empty() ? "none" : events);
  line("checkpoints", std::to_string(f.checkpoints_committed) + " committed" +
                          (f.last_checkpoint_step ? " (last step " + std::to_string(*f.last_checkpoint_step) + ")"
                                                  : std::string()) +
                          (f.checkpoint_failures ? ", " + std::to_string(f.checkpoint_failures) + " failed" : std::string()));
  line("resume from", e.resume_step ? "step " + std::to_string(*e.resume_step) + " (" + e.resume_checkpoint + ")"
                                    : std::string("no checkpoint: a new run starts at step 0"));
  uint64_t bad = 0;
  std::string reasons;
  for (const auto& [r, n] : f.bad_samples) {
    bad += n;
    reasons += " " + r + "=" + std::to_string(n);
  }
  line("bad samples", std::to_string(bad) + (reasons.empty() ? "" : ":" + reasons));
  for (const auto& l : bad_sample_lines(f.bad_sample_list, f.bad_samples_unlisted_draws, 8)) line("", "  " + l);
  if (f.mismatched_names > 0)
    line("names", std::to_string(f.mismatched_names) + " samples decoded by bytes of another format than their names say (mismatched_name)");
  for (const auto& c : e.rank_crashes) line("rank crashed", c);
  line("downgrades", std::to_string(f.downgraded_samples) + " videos keyframe-only; " +
                         std::to_string(f.slow_data_steps) + " steps waited long for data");
  line("run dir", e.run_dir);
  return t;
}

}  // namespace msomni::orchestrator
