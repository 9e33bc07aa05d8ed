// scheduler_status_json (see scheduler_status_json.hpp).
#include "scheduler_status_json.hpp"

#include "scheduler_types.hpp"

#include <algorithm>

namespace msomni::cli {

const char* job_class_name(job_class c) {
  static const char* const names[] = {"critical", "regular", "best-effort"};
  const auto n = static_cast<uint8_t>(c);
  return n < 3 ? names[n] : "?";
}

nlohmann::ordered_json figures_json(const msg::reason_figures& figures) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [name, value] : figures) o[name] = value;
  return o;
}

nlohmann::ordered_json decision_json(const msg::job_command& c) {
  nlohmann::ordered_json o;
  o["at_s"] = c.at_s;
  o["kind"] = sched::to_string(c.kind);
  o["job"] = c.job;
  if (!c.host.empty()) o["host"] = c.host;
  if (!c.gpus.empty()) o["gpus"] = c.gpus.size();
  if (c.share > 0) o["share"] = c.share;
  o["reason"] = c.reason;
  o["figures"] = figures_json(c.figures);
  return o;
}

nlohmann::ordered_json scheduler_status_json(const msg::scheduler_status& s) {
  nlohmann::ordered_json o;
  o["policy"] = s.policy;
  o["gpus_total"] = s.gpus_total;
  o["gpus_free"] = s.gpus_free;
  o["pending"] = {{"critical", s.pending_critical}, {"regular", s.pending_regular}, {"best_effort", s.pending_best_effort}};
  o["queue_capacity"] = s.queue_capacity;
  o["running"] = s.running;
  o["borrowed"] = s.borrowed;
  o["draining"] = s.draining;
  o["guests"] = s.guests;
  o["decisions"] = s.decisions;
  o["reserve_deferrals"] = s.reserve_deferrals;
  o["rejected"] = s.rejected;
  o["budget_holds"] = s.budget_holds;
  o["recovering"] = s.recovering;
  o["held_back"] = s.held_back;
  o["metrics_address"] = s.metrics_address;
  o["best_effort_drain_s"] = s.best_effort_drain_s;
  o["held"] = {{"reason", s.held}, {"job", s.held_job}, {"detail", s.held_detail},
               {"figures", figures_json(s.held_figures)}};
  auto& jobs = o["jobs"] = nlohmann::ordered_json::array();
  for (const auto& j : s.jobs) {
    nlohmann::ordered_json row;
    row["job"] = j.job;
    row["class"] = job_class_name(j.job_class);
    row["phase"] = j.phase;
    row["gpus"] = j.gpus;
    row["replicas"] = j.replicas;
    row["borrowed"] = j.borrowed;
    row["host"] = j.host;
    row["for_s"] = std::max(0.0, s.now_s - j.since_s);
    if (j.hold != "none") {  // why it waits, does not grow, or (a critical host) lends nothing
      row["hold"] = j.hold;
      row["hold_detail"] = j.hold_detail;
    }
    // A guest's share of its host's GPU time; a critical host's lendable share.
    if (j.phase == "guest") row["guest_share"] = j.share;
    else if (j.job_class == job_class::critical && j.phase == "running") row["lendable_share"] = j.share;
    if (!j.why.empty()) row["why"] = j.why;  // a guest's placement, a lending host's lending
    if (!j.figures.empty()) row["figures"] = figures_json(j.figures);  // the numbers of hold_detail, else of why
    jobs.push_back(std::move(row));
  }
  o["jobs_total"] = s.jobs_listed_of;
  auto& recent = o["recent_decisions"] = nlohmann::ordered_json::array();
  for (const auto& c : s.recent) recent.push_back(decision_json(c));
  // The ended jobs it keeps, newest first: the stopped ones (resumable) apart from the rest.
  o["ended_kept"] = s.ended.size();
  o["ended_capacity"] = s.ended_capacity;
  auto& stopped = o["stopped"] = nlohmann::ordered_json::array();
  auto& ended = o["ended"] = nlohmann::ordered_json::array();
  for (const auto& j : s.ended) {
    nlohmann::ordered_json row;
    row["job"] = j.job;
    row["class"] = job_class_name(j.job_class);
    if (j.phase == "stopped") {
      row["resume_step"] = j.checkpoint_step;
      row["ago_s"] = std::max(0.0, s.now_s - j.since_s);
      stopped.push_back(std::move(row));
      continue;
    }
    row["end"] = j.phase;
    row["exit_code"] = j.exit_code;
    row["ago_s"] = std::max(0.0, s.now_s - j.since_s);
    ended.push_back(std::move(row));
  }
  return o;
}

}  // namespace msomni::cli
