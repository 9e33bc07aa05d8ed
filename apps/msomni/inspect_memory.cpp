// The memory view of `msomni inspect` (see inspect_model.hpp): per rank what its compute
// backend holds, the step's peak and the budget beside the memory watermark predictor's
// forecast, the predictor's counts, and its newest advice and fit events.
#include "inspect_model.hpp"
#include "inspect_format.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace msomni::cli::inspect {

namespace {

constexpr double bytes_per_gb = 1e9;  // the [memory] settings and the journal count GB as 10^9 bytes
constexpr size_t memory_events_shown = 8;

// Every label value of a family with its values summed over the rest (all processes).
std::map<std::string, double> totals_by(const json& job, const char* family_name, const char* label_name) {
  std::map<std::string, double> out;
  for (const auto& row : family(job, family_name))
    if (const auto v = value_of(row)) out[label_of(row, label_name)] += *v;
  return out;
}

// "reserve 3, evict 0, overflow 1": the `known` labels in their order (0 when absent), then
// any other the reply has.
std::string counts_text(const std::map<std::string, double>& counts, const std::vector<std::string>& known) {
  std::string text;
  const auto add = [&](const std::string& name, double n) { text += (text.empty() ? "" : ", ") + name + " " + plain_number(n); };
  for (const auto& k : known) add(k, find_value(counts, k).value_or(0));
  for (const auto& [k, n] : counts)
    if (std::find(known.begin(), known.end(), k) == known.end()) add(k.empty() ? "?" : k, n);
  return text;
}

const json& memory_of(const json& job) {
  static const json none = json::object();
  if (!job.is_object()) return none;
  const auto it = job.find("memory");
  return it != job.end() && it->is_object() ? *it : none;
}

// The memory events, oldest first: the reply's memory.events, else those of the timeline.
std::vector<json> memory_events(const json& job) {
  std::vector<json> out;
  const auto& memory = memory_of(job);
  const auto from = memory.find("events");
  const bool own = from != memory.end() && from->is_array();
  const json none = json::array();
  const json& list = own ? *from : job.is_object() && job.contains("timeline") && job["timeline"].is_array() ? job["timeline"] : none;
  for (const auto& e : list) {
    const auto kind = e.value("kind", std::string());
    if (kind == "memory_advice" || kind == "memory_fit") out.push_back(e);
  }
  return out;
}

std::string gb_text(std::optional<double> gb) { return gb ? fixed(*gb, 3) + " GB" : std::string("?"); }

// The memory series per rank: the compute backend's kinds (in_use, peak, budget; 0: none),
// the forecast per target (a rank's name), and the host bytes.
struct rank_series {
  std::map<std::string, std::map<std::string, double>> compute;
  std::map<std::string, double> forecast;
  std::map<std::string, double> host;
};

rank_series series_of(const json& job) {
  rank_series s;
  for (const auto& row : family(job, "msomni_rank_compute_memory_bytes"))
    if (const auto v = value_of(row)) s.compute[process_of(row)][label_of(row, "kind")] = *v;
  s.forecast = totals_by(job, "msomni_memory_forecast_bytes", "target");
  for (const auto& row : family(job, "msomni_rank_memory_bytes"))
    if (label_of(row, "kind") == "host")
      if (const auto v = value_of(row)) s.host[process_of(row)] += *v;
  return s;
}

// The status's ranks in its order, then any other rank a series names (one that left).
std::vector<std::string> ranks_of(const json& job, const rank_series& s) {
  std::vector<std::string> ranks;
  if (job.is_object() && job.contains("ranks") && job["ranks"].is_array())
    for (const auto& r : job["ranks"]) ranks.push_back(r.value("name", std::string("?")));
  std::set<std::string> others;
  for (const auto& [name, kinds] : s.compute) others.insert(name);
  for (const auto& [name, bytes] : s.forecast) others.insert(name);
  for (const auto& name : others)
    if (!name.empty() && std::find(ranks.begin(), ranks.end(), name) == ranks.end()) ranks.push_back(name);
  return ranks;
}

// One row per rank: its memory, budget, forecast and whether the forecast fits. `over` gets
// the number of ranks whose forecast plus the margin is over the budget.
table ranks_table(const std::vector<std::string>& ranks, const rank_series& s, std::optional<double> device_gb,
                  std::optional<double> margin_gb, size_t& over) {
  table t{"ranks",
          {{"RANK"}, {"IN_USE", true}, {"PEAK", true}, {"BUDGET", true}, {"FORECAST", true}, {"HEADROOM", true},
           {"FIT"}, {"HOST", true}},
          {}};
  over = 0;
  for (const auto& name : ranks) {
    const auto c = s.compute.find(name);
    const auto kind = [&](const char* k) {
      return c == s.compute.end() ? std::nullopt : find_value(c->second, std::string(k));
    };
    // The rank's own budget (memory.device_memory_gb as it enforces it; 0 none), else the setting.
    auto budget = kind("budget");
    if (!budget || *budget <= 0) budget = device_gb && *device_gb > 0 ? std::optional<double>(*device_gb * bytes_per_gb) : std::nullopt;
    const auto f = find_value(s.forecast, name);
    std::optional<double> headroom;
    if (budget && f) headroom = *budget - *f;
    // The predictor's test: the forecast plus the margin must stay within the budget.
    std::string fit = "-";
    if (headroom && margin_gb) {
      const bool passes = *headroom < *margin_gb * bytes_per_gb;
      fit = passes ? "OVER" : "ok";
      over += passes;
    }
    t.rows.push_back({text_cell(name), si_bytes_cell(kind("in_use")), si_bytes_cell(kind("peak")), si_bytes_cell(budget),
                      si_bytes_cell(f), si_bytes_cell(headroom), text_cell(fit), si_bytes_cell(find_value(s.host, name))});
  }
  return t;
}

// The newest memory events, newest first, at most memory_events_shown.
table events_table(const json& job) {
  table events{"memory events", {{"TIME"}, {"KIND"}, {"STEP", true}, {"RANK"}, {"DETAIL"}}, {}};
  const auto all = memory_events(job);
  for (auto it = all.rbegin(); it != all.rend() && events.rows.size() < memory_events_shown; ++it) {  // newest first
    const auto time_ms = json_number(*it, "time_ms");
    events.rows.push_back({{clock_text(time_ms), time_ms}, text_cell(it->value("kind", std::string())),
                           number_cell(json_number(*it, "step"), 0), text_cell(it->value("rank", std::string())),
                           text_cell(it->value("detail", std::string()))});
  }
  return events;
}

}  // namespace

view_content memory_view(const snapshot& now) {
  const auto& job = now.job;
  const auto& settings = memory_of(job);
  const auto margin_gb = json_number(settings, "safety_margin_gb");
  const auto device_gb = json_number(settings, "device_memory_gb");
  const auto predictor = settings.find("predictor_enabled");
  const bool predictor_known = predictor != settings.end() && predictor->is_boolean();

  const auto series = series_of(job);
  size_t over = 0;
  table t = ranks_table(ranks_of(job, series), series, device_gb, margin_gb, over);

  view_content v;
  if (predictor_known && !predictor->get<bool>()) {
    v.lines.push_back("memory predictor off (memory.predictor_enabled = false): no forecast");
  } else {
    v.lines.push_back("forecast: peak of the next " + json_text_of(settings, "horizon_steps") + " steps, margin " +
                      gb_text(margin_gb) + ", device " + gb_text(device_gb));
    if (margin_gb)
      v.lines.push_back("forecast + margin over the budget: " + std::to_string(over) + " of " +
                        std::to_string(t.rows.size()) + " ranks");
  }
  v.lines.push_back("advice: " + counts_text(totals_by(job, "msomni_memory_advice_total", "action"), {"reserve", "evict", "overflow"}));
  v.lines.push_back("fits: " + counts_text(totals_by(job, "msomni_memory_fits_total", "result"),
                                           {"requested", "replayed", "split", "keyframe", "unchanged", "unfit"}));
  v.lines.push_back("rank fit requests: " + counts_text(totals_by(job, "msomni_rank_fit_requests_total", "result"),
                                                        {"taken", "dropped", "stale", "superseded"}));
  v.lines.push_back("samples: " + counts_text(totals_by(job, "msomni_memory_samples_total", "result"), {"accepted", "refused"}));
  v.tables.push_back(std::move(t));
  v.tables.push_back(events_table(job));
  return v;
}

}  // namespace msomni::cli::inspect
