// The Grafana dashboard in configs/grafana as the tests see it: its PromQL expressions
// (panels, annotations, templating) and the metric names each one selects, so that a test
// can check them against the metric catalog and against what a real Prometheus scraped.
#pragma once

#include "metrics/metric_catalog.hpp"
#include "support/process_runner.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace msomni::testing {

inline std::string dashboard_path() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/grafana/msomni-job.json"; }

inline nlohmann::json load_dashboard(const std::string& path = dashboard_path()) {
  return nlohmann::json::parse(read_text(path));
}

// One PromQL expression of the dashboard and where it is (for messages).
struct dashboard_expr {
  std::string where;
  std::string expr;
  bool panel = false;  // a panel's target (it should show data), not an annotation or variable
};

// A templating query "label_values(SELECTOR, LABEL)" as the PromQL selector it reads; empty
// when the query has another form.
inline std::string label_values_selector(const std::string& query) {
  static const std::regex form(R"(^\s*label_values\(\s*(.+)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$)");
  std::smatch m;
  return std::regex_match(query, m, form) ? m[1].str() : std::string{};
}

inline std::string variable_query(const nlohmann::json& variable) {
  const auto& q = variable.value("query", nlohmann::json{});
  if (q.is_string()) return q.get<std::string>();
  if (q.is_object()) return q.value("query", "");
  return {};
}

// Every expression of the dashboard: the panels' targets (rows' nested panels too), the
// annotation queries, and the templating variables' selectors.
inline std::vector<dashboard_expr> dashboard_exprs(const nlohmann::json& dashboard) {
  std::vector<dashboard_expr> out;
  std::vector<nlohmann::json> panels;
  for (const auto& p : dashboard.value("panels", nlohmann::json::array())) {
    panels.push_back(p);
    for (const auto& nested : p.value("panels", nlohmann::json::array())) panels.push_back(nested);
  }
  for (const auto& p : panels)
    for (const auto& t : p.value("targets", nlohmann::json::array()))
      if (t.contains("expr"))
        out.push_back({"panel \"" + p.value("title", "") + "\" target " + t.value("refId", ""), t.at("expr"), true});
  for (const auto& a : dashboard.value("annotations", nlohmann::json::object()).value("list", nlohmann::json::array()))
    if (a.contains("expr")) out.push_back({"annotation \"" + a.value("name", "") + "\"", a.at("expr"), false});
  for (const auto& v : dashboard.value("templating", nlohmann::json::object()).value("list", nlohmann::json::array()))
    if (v.value("type", "") == "query")
      out.push_back({"variable \"" + v.value("name", "") + "\"", label_values_selector(variable_query(v)), false});
  return out;
}

// The metric names a PromQL expression selects: identifiers that are neither functions
// (followed by "("), nor aggregations or other keywords, nor inside label matchers, ranges, strings,
// grouping clauses (by/without/on/ignoring/group_left/group_right (...)) or Grafana's $variables.
inline std::set<std::string> promql_metric_names(const std::string& expr) {
  // Aggregations too: "sum by (le) (...)" puts the clause between the name and its "(".
  static const std::set<std::string> keywords{
      "by",  "without", "on",     "ignoring", "group_left", "group_right", "offset",       "bool",   "and",
      "or",  "unless",  "inf",    "nan",      "sum",        "min",         "max",          "avg",    "group",
      "count", "stddev", "stdvar", "topk",    "bottomk",    "quantile",    "count_values", "limitk", "limit_ratio"};
  static const std::set<std::string> grouping{"by", "without", "on", "ignoring", "group_left", "group_right"};
  std::set<std::string> names;
  const auto is_ident_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
  const auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
  const auto skip_string = [&](size_t i) {  // i at the opening quote; returns past the closing one
    const char q = expr[i++];
    while (i < expr.size() && expr[i] != q) i += expr[i] == '\\' && q != '`' ? 2 : 1;
    return i + 1;
  };
  const auto skip_group = [&](size_t i, char open, char close) {  // i at `open`; returns past its match
    int depth = 0;
    while (i < expr.size()) {
      const char c = expr[i];
      if (c == '"' || c == '\'' || c == '`') {
        i = skip_string(i);
        continue;
      }
      if (c == open) ++depth;
      if (c == close && --depth == 0) return i + 1;
      ++i;
    }
    return i;
  };
  size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = skip_string(i);
    } else if (c == '{') {
      i = skip_group(i, '{', '}');
    } else if (c == '[') {
      i = skip_group(i, '[', ']');
    } else if (c == '$') {  // $name or ${name}
      ++i;
      if (i < expr.size() && expr[i] == '{') i = skip_group(i, '{', '}');
      while (i < expr.size() && is_ident(expr[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {  // numbers, durations, 1e-3
      while (i < expr.size() && (is_ident(expr[i]) || expr[i] == '.' ||
                                 ((expr[i] == '-' || expr[i] == '+') && (expr[i - 1] == 'e' || expr[i - 1] == 'E'))))
        ++i;
    } else if (is_ident_start(c)) {
      const size_t start = i;
      while (i < expr.size() && is_ident(expr[i])) ++i;
      const std::string word = expr.substr(start, i - start);
      size_t next = i;
      while (next < expr.size() && std::isspace(static_cast<unsigned char>(expr[next]))) ++next;
      const bool call = next < expr.size() && expr[next] == '(';
      if (grouping.count(word) && call) {
        i = skip_group(next, '(', ')');
      } else if (!call && !keywords.count(word)) {
        names.insert(word);
      }
    } else {
      ++i;
    }
  }
  return names;
}

// The catalog family a scraped metric name belongs to: the name itself, or for a histogram
// family its _bucket, _sum or _count series; empty when none.
inline std::string catalog_family_of(const std::string& name) {
  if (metrics::find_family(name)) return name;
  for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const auto base = name.substr(0, name.size() - suffix.size());
    if (const auto* f = metrics::find_family(base); f && f->kind == metrics::metric_kind::histogram) return base;
  }
  return {};
}

// Every metric name the dashboard's expressions select.
inline std::set<std::string> dashboard_metric_names(const nlohmann::json& dashboard) {
  std::set<std::string> all;
  for (const auto& e : dashboard_exprs(dashboard)) all.merge(promql_metric_names(e.expr));
  return all;
}

// "WHERE: NAME" for every name in the dashboard's expressions that is no catalog family.
inline std::vector<std::string> names_outside_catalog(const nlohmann::json& dashboard) {
  std::vector<std::string> out;
  for (const auto& e : dashboard_exprs(dashboard))
    for (const auto& n : promql_metric_names(e.expr))
      if (catalog_family_of(n).empty()) out.push_back(e.where + ": " + n);
  return out;
}

}  // namespace msomni::testing
