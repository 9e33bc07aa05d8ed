// node_check_core (see node_check_core.hpp).
#include "node_check_core.hpp"

#include "health_report.hpp"

#include <algorithm>
#include <cstdio>

namespace msomni::health {

using namespace node_checks;
using json = nlohmann::ordered_json;

namespace {

std::string ms_text(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", ms);
  return b;
}

int rank_of(const std::string& verdict) { return verdict == "fail" ? 2 : verdict == "warn" ? 1 : 0; }

std::string worst(const std::string& a, const std::string& b) { return rank_of(a) >= rank_of(b) ? a : b; }

// The ids and reasons of a report's failed checks, for the job's end reason.
std::string failed_checks(const json& report) {
  std::string out;
  for (const auto& c : report.value("checks", json::array()))
    if (c.value("status", "") == "fail")
      out += (out.empty() ? "" : "; ") + c.value("id", "?") + " (" + c.value("reason", "") + ")";
  return out.empty() ? "no reason given" : out;
}

json failed_report(const std::string& node, const std::string& why) {
  health_report r;
  r.node = node;
  r.checks.push_back(judge_problems("node.report", {why}, ""));
  auto j = to_json(r);
  j.erase("config");
  j.erase("level");
  return j;
}

}  // namespace

node_check_core::node_check_core(node_check_settings s, json control_report)
    : s_(std::move(s)), control_(std::move(control_report)) {
  for (const auto& n : s_.nodes) entry(n);
}

node_check_core::node_entry& node_check_core::entry(const std::string& node) {
  auto [it, fresh] = nodes_.try_emplace(node);
  if (fresh) order_.push_back(node);
  return it->second;
}

std::vector<action> node_check_core::on_agent(const std::string& node) {
  auto& e = entry(node);
  e.joined = true;
  if (e.report && !over_) return {};  // a hello again before the end: its report stands
  e.report.reset();
  return {ask_check{node}};
}

std::vector<action> node_check_core::on_report(const std::string& node, const std::string& report_json,
                                               const std::string& probe_address) {
  auto& e = entry(node);
  auto parsed = json::parse(report_json, nullptr, /*allow_exceptions=*/false);
  if (report_json.empty())
    parsed = failed_report(node, "the agent runs no node checks (it was started without them)");
  else if (!parsed.is_object() || !parsed.contains("checks"))
    parsed = failed_report(node, "the agent's report is not the pre-flight's JSON object");
  parsed["node"] = node;  // the name the job knows it by
  e.verdict = parsed.value("verdict", "fail");
  e.report = std::move(parsed);
  e.address = probe_address;
  if (!over_) return maybe_next();
  if (e.verdict == "fail") return {refuse{node, failed_checks(*e.report)}};
  return {admit{node}};
}

std::string node_check_core::verdict_of(const std::string& node) const {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? "" : it->second.verdict;
}

std::vector<action> node_check_core::on_no_report(const std::string& node, const std::string& why) {
  return on_report(node, failed_report(node, "no report from the agent: " + why).dump(), "");
}

std::vector<action> node_check_core::on_gather_deadline() {
  if (over_ || pairing_) return {};
  std::vector<std::string> waiting;
  for (const auto& n : s_.nodes) {
    if (nodes_.at(n).joined) waiting.push_back(n);
    else missing_.push_back(n);
  }
  if (missing_.empty()) return {};
  s_.nodes = std::move(waiting);  // the initial check covers the nodes that came
  return maybe_next();
}

std::vector<std::pair<std::string, std::string>> node_check_core::plan_pairs(const std::vector<std::string>& nodes,
                                                                             size_t all_pairs_up_to) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t n = nodes.size();
  if (n < 2) return out;
  if (n <= all_pairs_up_to) {
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) out.emplace_back(nodes[i], nodes[j]);
    return out;
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t d = 1; d <= 2; ++d) out.emplace_back(nodes[i], nodes[(i + d) % n]);
  return out;
}

std::vector<action> node_check_core::maybe_next() {
  if (over_) return {};
  if (!pairing_) {
    for (const auto& n : s_.nodes)
      if (!nodes_.at(n).report) return {};  // still waiting for a listed node
    bool any_failed = false;
    for (const auto& n : s_.nodes) any_failed = any_failed || nodes_.at(n).verdict == "fail";
    if (any_failed || s_.nodes.size() < 2) return finish();
    pairing_ = true;
    for (const auto& [a, b] : plan_pairs(s_.nodes, s_.all_pairs_up_to)) pairs_.push_back({{a, b, std::nullopt, ""}, {}});
  }
  while (next_pair_ < pairs_.size()) {
    auto& p = pairs_[next_pair_];
    const auto& a = nodes_.at(p.outcome.a);
    const auto& b = nodes_.at(p.outcome.b);
    if (!a.address.empty() && !b.address.empty())
      return {ask_pair{next_pair_, p.outcome.a, p.outcome.b, b.address, a.address}};
    p.outcome.error = (a.address.empty() ? p.outcome.a : p.outcome.b) + " has no pair probe";
    ++next_pair_;
  }
  return finish();
}

std::vector<action> node_check_core::on_pair_result(uint64_t pair, const std::string& node, double median_ms,
                                                    const std::string& error) {
  if (over_ || !pairing_ || pair != next_pair_ || pair >= pairs_.size()) return {};  // stale
  auto& p = pairs_[pair];
  if (node != p.outcome.a && node != p.outcome.b) return {};
  if (!p.answered.insert(node).second) return {};
  if (!error.empty()) p.outcome.error += (p.outcome.error.empty() ? "" : "; ") + node + ": " + error;
  else p.outcome.ms = std::max(p.outcome.ms.value_or(0.0), median_ms);
  if (p.answered.size() < 2) return {};
  if (!p.outcome.error.empty()) p.outcome.ms.reset();
  ++next_pair_;
  return maybe_next();
}

std::vector<check_result> node_check_core::judge_pairs(const std::vector<std::string>& nodes,
                                                       const std::vector<pair_outcome>& pairs, double factor) {
  std::vector<check_result> out;
  check_result all;
  all.id = "multinode.pairs";
  all.value = std::to_string(pairs.size());
  all.unit = "pairs";
  std::string errors;
  for (const auto& p : pairs)
    if (!p.ms) errors += (errors.empty() ? "" : "; ") + p.a + "-" + p.b + ": " + p.error;
  all.status = errors.empty() ? check_status::pass : check_status::fail;
  all.reason = errors.empty() ? "every pair's all-reduce gave the exact sum" : errors;
  out.push_back(all);

  std::map<std::string, std::pair<double, std::string>> best;  // node -> (ms, peer)
  for (const auto& p : pairs) {
    if (!p.ms) continue;
    for (const auto& [me, peer] : {std::pair{p.a, p.b}, std::pair{p.b, p.a}}) {
      auto it = best.find(me);
      if (it == best.end() || *p.ms < it->second.first) best[me] = {*p.ms, peer};
    }
  }
  std::vector<double> bests;
  for (const auto& [n, b] : best) bests.push_back(b.first);
  std::sort(bests.begin(), bests.end());
  const bool compare = nodes.size() >= 3 && bests.size() >= 3;
  double median = 0;
  if (!bests.empty())
    median = bests.size() % 2 ? bests[bests.size() / 2] : (bests[bests.size() / 2 - 1] + bests[bests.size() / 2]) / 2;
  std::vector<std::string> stragglers;
  for (const auto& n : nodes) {
    check_result c;
    c.id = "multinode.allreduce." + n;
    c.unit = "ms";
    const auto it = best.find(n);
    if (it == best.end()) {
      c.status = check_status::fail;
      c.reason = "no pairing of " + n + " completed";
    } else {
      c.value = ms_text(it->second.first);
      c.reason = "fastest pairing: with " + it->second.second;
      c.status = check_status::pass;
      if (compare) {
        c.threshold = ms_text(factor * median);
        if (it->second.first > factor * median) {
          c.status = check_status::warn;
          c.reason = "a straggler: even its fastest pairing (with " + it->second.second + ") is " +
                     ms_text(it->second.first / median) + " times the median node's " + ms_text(median) + " ms";
          stragglers.push_back(n + " (" + ms_text(it->second.first / median) + "x)");
        }
      }
    }
    out.push_back(c);
  }
  check_result s;
  s.id = "multinode.straggler";
  if (!compare) {
    s.status = check_status::skipped;
    s.reason = nodes.size() < 3 ? "fewer than 3 nodes: a slow pair cannot tell which of its ends is slow"
                                : "fewer than 3 nodes completed a pairing";
  } else {
    s.threshold = ms_text(factor) + "x the median";
    s.value = std::to_string(stragglers.size());
    s.unit = "nodes";
    s.status = stragglers.empty() ? check_status::pass : check_status::warn;
    std::string names;
    for (const auto& x : stragglers) names += (names.empty() ? "" : ", ") + x;
    s.reason = stragglers.empty() ? "every node's fastest pairing is within " + ms_text(factor) + "x the median"
                                  : "straggler nodes: " + names;
  }
  out.push_back(s);
  return out;
}

std::vector<action> node_check_core::finish() {
  over_ = true;
  json report = control_;
  std::string job = control_.value("verdict", "pass");
  std::string reasons;
  report["nodes"] = json::array();
  for (const auto& n : order_) {
    const auto& e = nodes_.at(n);
    if (!e.report) continue;
    report["nodes"].push_back(*e.report);
    job = worst(job, e.verdict);
    if (e.verdict == "fail") reasons += (reasons.empty() ? "" : "; ") + n + ": " + failed_checks(*e.report);
  }
  if (pairing_) {
    std::vector<pair_outcome> outcomes;
    for (const auto& p : pairs_) outcomes.push_back(p.outcome);
    health_report multi;
    multi.node = "multinode";
    multi.checks = judge_pairs(s_.nodes, outcomes, s_.straggler_factor);
    const auto mj = to_json(multi);
    report["multinode"] = json{{"verdict", mj.at("verdict")}, {"checks", mj.at("checks")}};
    const std::string v = mj.at("verdict").get<std::string>();
    job = worst(job, v);
    if (v == "fail") reasons += (reasons.empty() ? "" : "; ") + std::string("multinode: ") + failed_checks(mj);
  }
  if (!missing_.empty()) report["missing"] = missing_;
  report["job_verdict"] = job;
  std::vector<action> out;
  out.push_back(done{job == "fail", reasons, report});
  if (job == "fail") return out;
  for (const auto& n : order_) {
    const auto& e = nodes_.at(n);
    if (!e.report || !e.joined) continue;
    if (e.verdict == "fail") out.push_back(refuse{n, failed_checks(*e.report)});
    else out.push_back(admit{n});
  }
  return out;
}

}  // namespace msomni::health
