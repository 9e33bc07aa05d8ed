// The elastic, predictor and scheduler views of `msomni inspect` (see inspect_model.hpp).
#include "inspect_model.hpp"
#include "inspect_format.hpp"

namespace msomni::cli::inspect {

namespace {

const json& array_at(const json& o, const char* key) {
  static const json none = json::array();
  if (!o.is_object()) return none;
  const auto it = o.find(key);
  return it != o.end() && it->is_array() ? *it : none;
}

}  // namespace

view_content elastic_view(const snapshot& now) {
  const auto& job = now.job;
  view_content v;
  v.lines.push_back("epoch " + json_text_of(job, "epoch") + ", phase " + json_text_of(job, "phase") + ", world " +
                    json_text_of(job, "world") + " of target " + json_text_of(job, "target") + ", step " +
                    json_text_of(job, "step") + " of " + json_text_of(job, "total_steps") + ", grad_accum " +
                    json_text_of(job, "grad_accum"));
  std::string agents = "agents:";
  for (const auto& a : array_at(job, "agents"))
    agents += " " + a.value("node", std::string("?")) + " (" + json_text_of(a, "slots") + " slots, " +
              (a.value("alive", false) ? "alive" : "down") + ")";
  v.lines.push_back(agents == "agents:" ? "agents: none" : agents);
  table t{"events", {{"TIME"}, {"KIND"}, {"EPOCH", true}, {"STEP", true}, {"DETAIL"}}, {}};
  const auto& events = array_at(job, "timeline");
  for (auto it = events.rbegin(); it != events.rend(); ++it) {  // newest first
    const auto time_ms = json_number(*it, "time_ms");
    t.rows.push_back({{clock_text(time_ms), time_ms}, text_cell(it->value("kind", std::string())),
                      number_cell(json_number(*it, "epoch"), 0), number_cell(json_number(*it, "step"), 0),
                      text_cell(it->value("detail", std::string()))});
  }
  v.tables.push_back(std::move(t));
  return v;
}

view_content predictor_view(const snapshot& now) {
  view_content v;
  const auto p = now.job.is_object() && now.job.contains("predictor") ? now.job["predictor"] : json();
  if (!p.is_object()) {
    v.lines.push_back("no forecast in the reply");
    return v;
  }
  const auto show = [&](const char* key, int decimals) {
    const auto n = json_number(p, key);
    return n ? fixed(*n, decimals) : std::string("-");
  };
  v.lines.push_back("idle ratio " + show("idle_ratio", 3) + ", confidence " + show("confidence", 3) + ", horizon " +
                    show("horizon_s", 0) + " s");
  table t{"windows", {{"WINDOW", true}, {"START_IN_S", true}, {"LENGTH_S", true}}, {}};
  double n = 0;
  // Checkpoint phases last milliseconds on a small job: lengths to the millisecond, so that
  // a short window does not read as 0.0.
  for (const auto& w : array_at(p, "windows"))
    t.rows.push_back({number_cell(++n, 0), number_cell(json_number(w, "start_in_s"), 1),
                      number_cell(json_number(w, "length_s"), 3)});
  if (t.rows.empty()) v.lines.push_back("no idle window predicted within the horizon");
  v.tables.push_back(std::move(t));
  return v;
}

view_content scheduler_view(const snapshot& now) {
  view_content v;
  const auto& s = now.scheduler;
  if (!s.is_object()) {
    v.lines.push_back("no scheduler watched (give --scheduler-info FILE)");
    return v;
  }
  const auto pending = s.contains("pending") ? s["pending"] : json::object();
  v.lines.push_back("policy " + json_text_of(s, "policy") + ", GPUs " + json_text_of(s, "gpus_free") + " free of " +
                    json_text_of(s, "gpus_total"));
  v.lines.push_back("queue: critical " + json_text_of(pending, "critical") + ", regular " +
                    json_text_of(pending, "regular") + ", best-effort " + json_text_of(pending, "best_effort") +
                    " (bound " + json_text_of(s, "queue_capacity") + ")");
  v.lines.push_back("running " + json_text_of(s, "running") + " (borrowed " + json_text_of(s, "borrowed") +
                    "), draining " + json_text_of(s, "draining") + ", guests " + json_text_of(s, "guests") +
                    ", decisions " + json_text_of(s, "decisions") + ", rejected " + json_text_of(s, "rejected"));
  // Why free GPUs stay unused, with the numbers compared.
  if (s.contains("held") && s["held"].is_object() && s["held"].value("reason", std::string("none")) != "none")
    v.lines.push_back("held: " + s["held"].value("detail", std::string()));
  table t{"jobs", {{"JOB"}, {"CLASS"}, {"PHASE"}, {"GPUS", true}, {"REPLICAS", true}, {"FOR_S", true}, {"NOTE"}}, {}};
  for (const auto& j : array_at(s, "jobs")) {
    const auto host = j.value("host", std::string());
    std::string note = j.value("borrowed", false) ? "borrowed" : host.empty() ? "" : "guest of " + host;
    // Why it waits or lends nothing, else why it is a guest or lends: the scheduler's reason.
    const auto why = j.value("hold_detail", j.value("why", std::string()));
    if (!why.empty()) note += (note.empty() ? "" : ": ") + why;
    t.rows.push_back({text_cell(j.value("job", std::string())), text_cell(j.value("class", std::string())),
                      text_cell(j.value("phase", std::string())), number_cell(json_number(j, "gpus"), 0),
                      number_cell(json_number(j, "replicas"), 0), number_cell(json_number(j, "for_s"), 0),
                      text_cell(note)});
  }
  v.tables.push_back(std::move(t));
  return v;
}

}  // namespace msomni::cli::inspect
