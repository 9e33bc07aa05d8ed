// orchestrator_json (see orchestrator_json.hpp).
#include "orchestrator_json.hpp"

#include "training_health.hpp"

#include "core/json_number.hpp"

#include <cmath>
#include <utility>

namespace msomni::orchestrator {

namespace {

// `v` to `digits` decimals (the double nearest that decimal, so it prints as one).
double decimals(double v, int digits) {
  if (!std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}


}  // namespace

ordered_json metrics_json(const metrics_record& r) {
  ordered_json j = ordered_json::object();
  j["step"] = r.step;
  put_number(j, "loss", significant_digits(r.loss, 9));
  j["world_size"] = r.world_size;
  put_number(j, "step_time_ms", decimals(r.step_time_ms, 3));
  put_number(j, "tokens_per_s", decimals(r.tokens_per_s, 1));
  put_number(j, "data_wait_ms", decimals(r.data_wait_ms, 3));
  put_number(j, "checkpoint_ms", decimals(r.checkpoint_ms, 3));
  j["downgraded_samples"] = r.downgraded_samples;
  j["time_ms"] = r.time_ms;
  auto& bad = j["bad_samples"] = ordered_json::object();
  for (const auto& b : r.bad_samples) bad[b.reason] = bad.value(b.reason, uint64_t{0}) + b.count;
  put_number(j, "grad_norm", significant_digits(r.grad_norm, 9));
  // The slowest rank's forward and backward, and its ratio to the mean (1: even work).
  put_number(j, "compute_ms_max", decimals(r.compute_ms_max, 3));
  put_number(j, "compute_imbalance", decimals(r.compute_ms_mean > 0 ? r.compute_ms_max / r.compute_ms_mean : 1.0, 4));
  // Which non-finite value each was ("nan", "inf", "-inf"): the flag alone does not say.
  ordered_json nonfinite = ordered_json::object();
  for (const auto& [name, v] : {std::pair{"loss", r.loss}, std::pair{"grad_norm", r.grad_norm}})
    if (!std::isfinite(v)) nonfinite[name] = number_or_nonfinite_name(v);
  if (!nonfinite.empty()) j["nonfinite"] = std::move(nonfinite);
  if (r.optimizer_skipped) j["optimizer_skipped"] = true;
  return j;
}

ordered_json status_json(const job_status& s, const std::map<std::string, uint64_t>& bad_samples) {
  ordered_json j = ordered_json::object();
  j["phase"] = s.phase;
  j["epoch"] = s.epoch;
  j["step"] = s.step;
  j["total_steps"] = s.total_steps;
  j["world"] = s.world;
  j["target"] = s.target;
  j["grad_accum"] = s.grad_accum;
  const auto rank_json = [](const rank_status& r) {
    return ordered_json{{"name", r.name}, {"node", r.node}, {"pid", r.pid}, {"state", to_string(r.state)}, {"step", r.step}};
  };
  auto& ranks = j["ranks"] = ordered_json::array();
  for (const auto& r : s.ranks) ranks.push_back(rank_json(r));
  auto& agents = j["agents"] = ordered_json::array();
  for (const auto& a : s.agents)
    agents.push_back({{"node", a.node}, {"rack", a.rack}, {"switch", a.switch_name}, {"slots", a.slots}, {"alive", a.alive}});
  auto& bad = j["bad_samples"] = ordered_json::object();
  for (const auto& [reason, n] : bad_samples) bad[reason] = n;
  auto& departed = j["departed"] = ordered_json::array();
  for (const auto& r : s.departed) departed.push_back(rank_json(r));
  return j;
}

ordered_json bad_sample_list_json(const std::vector<bad_sample_ledger::entry>& entries) {
  auto out = ordered_json::array();
  for (const auto& e : entries) {
    const size_t slash = e.key.find('/');
    ordered_json j;
    j["shard"] = e.key.substr(0, slash);
    j["key"] = slash == std::string::npos ? std::string() : e.key.substr(slash + 1);
    j["reason"] = e.reason;
    j["cause"] = e.cause;
    j["draws"] = e.draws;
    j["first_step"] = e.first_step;
    j["first_rank"] = e.first_rank;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace msomni::orchestrator
