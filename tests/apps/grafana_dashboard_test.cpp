// The Grafana dashboard configs/grafana/msomni-job.json: importable as an exported dashboard
// (a DS_PROMETHEUS datasource input that every panel and query uses, its requirements, ids
// and grid positions), its job and rank variables, and every metric name in every PromQL
// expression a family of the metric catalog (histograms through _bucket, _sum, _count).
// The Prometheus integration test checks the same names against a real scrape.
#include "grafana_dashboard.hpp"

#include <doctest/doctest.h>

#include <map>

using msomni::testing::catalog_family_of;
using msomni::testing::dashboard_exprs;
using msomni::testing::load_dashboard;
using msomni::testing::promql_metric_names;
using nlohmann::json;

namespace {

const std::string ds_input = "${DS_PROMETHEUS}";

bool uses_input(const json& datasource) {
  if (datasource.is_string()) return datasource == ds_input;
  return datasource.is_object() && datasource.value("uid", "") == ds_input && datasource.value("type", "") == "prometheus";
}

std::vector<json> all_panels(const json& dashboard) {
  std::vector<json> out;
  for (const auto& p : dashboard.at("panels")) {
    out.push_back(p);
    for (const auto& nested : p.value("panels", json::array())) out.push_back(nested);
  }
  return out;
}

}  // namespace

TEST_CASE("grafana dashboard: the shape of an exported dashboard with a Prometheus datasource input") {
  const auto d = load_dashboard();
  REQUIRE(d.is_object());
  // The input Grafana asks for at import, and what the dashboard requires.
  REQUIRE(d.at("__inputs").is_array());
  bool input = false;
  for (const auto& i : d.at("__inputs"))
    input = input || (i.value("name", "") == "DS_PROMETHEUS" && i.value("type", "") == "datasource" &&
                      i.value("pluginId", "") == "prometheus");
  CHECK(input);
  std::set<std::string> required;
  for (const auto& r : d.at("__requires")) required.insert(r.value("type", "") + ":" + r.value("id", ""));
  CHECK(required.count("grafana:grafana"));
  CHECK(required.count("datasource:prometheus"));
  CHECK(required.count("panel:timeseries"));
  CHECK(d.at("schemaVersion").get<int>() >= 36);
  CHECK(d.at("title").is_string());
  CHECK(d.at("uid").is_string());
  CHECK(d.at("id").is_null());  // an exported dashboard carries no database id

  std::set<int> ids;
  std::set<std::string> panel_types;
  int with_targets = 0;
  for (const auto& p : all_panels(d)) {
    const auto title = p.value("title", "");
    CAPTURE(title);
    REQUIRE(p.contains("id"));
    CHECK(ids.insert(p.at("id").get<int>()).second);
    const auto& g = p.at("gridPos");
    CHECK(g.at("x").get<int>() >= 0);
    CHECK(g.at("x").get<int>() + g.at("w").get<int>() <= 24);
    CHECK(g.at("h").get<int>() > 0);
    if (p.at("type") == "row") continue;
    panel_types.insert(p.at("type").get<std::string>());
    CHECK(uses_input(p.at("datasource")));
    REQUIRE(p.at("targets").is_array());
    CHECK_FALSE(p.at("targets").empty());
    std::set<std::string> refs;
    for (const auto& t : p.at("targets")) {
      CHECK(uses_input(t.at("datasource")));
      CHECK(refs.insert(t.at("refId").get<std::string>()).second);
      CHECK_FALSE(t.at("expr").get<std::string>().empty());
    }
    ++with_targets;
  }
  CHECK(with_targets >= 12);
  for (const auto& type : panel_types) CHECK_MESSAGE(required.count("panel:" + type), type);

  // Annotations that query Prometheus use the same input.
  for (const auto& a : d.at("annotations").at("list"))
    if (a.contains("expr")) CHECK(uses_input(a.at("datasource")));
}

TEST_CASE("grafana dashboard: the job and rank variables come from label_values") {
  const auto d = load_dashboard();
  std::map<std::string, json> vars;
  for (const auto& v : d.at("templating").at("list")) vars[v.at("name")] = v;
  REQUIRE(vars.count("job"));
  REQUIRE(vars.count("rank"));
  for (const auto& [name, v] : vars) {
    CAPTURE(name);
    CHECK(v.at("type") == "query");
    CHECK(uses_input(v.at("datasource")));
    const auto q = msomni::testing::variable_query(v);
    CHECK(q.rfind("label_values(", 0) == 0);
    CHECK_FALSE(msomni::testing::label_values_selector(q).empty());
    CHECK(q.find(", " + name + ")") != std::string::npos);
  }
  // The rank variable follows the chosen job.
  CHECK(msomni::testing::variable_query(vars.at("rank")).find("$job") != std::string::npos);
}

TEST_CASE("grafana dashboard: every metric name in its expressions is a family of the metric catalog") {
  const auto d = load_dashboard();
  const auto exprs = dashboard_exprs(d);
  REQUIRE(exprs.size() >= 15);
  std::set<std::string> families;
  for (const auto& e : exprs) {
    CAPTURE(e.where);
    CAPTURE(e.expr);
    const auto names = promql_metric_names(e.expr);
    CHECK_FALSE(names.empty());
    for (const auto& n : names) families.insert(catalog_family_of(n));
  }
  std::string outside;
  for (const auto& n : msomni::testing::names_outside_catalog(d)) outside += "\n  " + n;
  CHECK_MESSAGE(outside.empty(), "not families of runtime/metrics/metric_catalog.cpp:" << outside);
  // The panels the dashboard is for.
  for (const char* f :
       {"msomni_rank_step_seconds", "msomni_rank_own_tokens_per_second", "msomni_rank_data_wait_ratio",
        "msomni_data_stage_fill_ratio", "msomni_data_samples_total", "msomni_data_downgrades_total",
        "msomni_job_world_size", "msomni_job_target_world_size", "msomni_elastic_events_total",
        "msomni_checkpoint_save_seconds", "msomni_actor_mailbox_depth", "msomni_sched_jobs", "msomni_sched_guests",
        "msomni_sched_gpus"})
    CHECK_MESSAGE(families.count(f), f);
  // Elastic events are an annotation.
  bool elastic_annotation = false;
  for (const auto& e : exprs)
    elastic_annotation = elastic_annotation || (e.where.rfind("annotation", 0) == 0 &&
                                                promql_metric_names(e.expr).count("msomni_elastic_events_total"));
  CHECK(elastic_annotation);
}

TEST_CASE("grafana dashboard: the PromQL name extraction finds selectors and nothing else") {
  using set = std::set<std::string>;
  CHECK(promql_metric_names(R"(histogram_quantile(0.95, sum by (le, rank) (rate(a_bucket{job=~"$job", x="y{z}"}[$__rate_interval]))))") ==
        set{"a_bucket"});
  CHECK(promql_metric_names("sum without(instance)(b) / on (job) group_left (rank) c offset 5m > bool 1e-3") ==
        set{"b", "c"});
  CHECK(promql_metric_names(R"x(label_replace(d, "dst", "$1", "src", "(.*)") and e or f unless g)x") ==
        set{"d", "e", "f", "g"});
  CHECK(promql_metric_names("${var} + $other + h:recorded").count("h:recorded"));
  CHECK(promql_metric_names("${var} + $other + h:recorded").size() == 1);
  // A name outside the catalog, or a histogram suffix on a family that is no histogram, is caught.
  CHECK(catalog_family_of("msomni_rank_step_seconds_bucket") == "msomni_rank_step_seconds");
  CHECK(catalog_family_of("msomni_checkpoint_save_seconds_count") == "msomni_checkpoint_save_seconds");
  CHECK(catalog_family_of("msomni_rank_loss") == "msomni_rank_loss");
  CHECK(catalog_family_of("msomni_rank_loss_sum").empty());
  CHECK(catalog_family_of("msomni_actor_messages_total_count").empty());
  CHECK(catalog_family_of("msomni_rank_step_seconds") == "msomni_rank_step_seconds");
  CHECK(catalog_family_of("msomni_not_a_family").empty());
  CHECK(catalog_family_of("up").empty());
}

TEST_CASE("grafana dashboard: a name outside the catalog is caught in a panel, an annotation or a variable") {
  auto d = load_dashboard();
  REQUIRE(msomni::testing::names_outside_catalog(d).empty());
  // The suffix of a histogram on a gauge, a made-up family, a variable on a name never exported.
  for (auto& p : d.at("panels"))
    if (p.at("type") != "row") {
      p.at("targets").push_back({{"refId", "Z"}, {"expr", "rate(msomni_rank_loss_count[1m])"}});
      break;
    }
  d.at("annotations").at("list").push_back({{"name", "made up"}, {"expr", "increase(msomni_made_up_total[1m]) > 0"}});
  d.at("templating").at("list").push_back(
      {{"name", "node"}, {"type", "query"}, {"query", "label_values(node_uname_info, nodename)"}});
  const auto outside = msomni::testing::names_outside_catalog(d);
  REQUIRE(outside.size() == 3);
  CHECK(outside[0].find(": msomni_rank_loss_count") != std::string::npos);
  CHECK(outside[1] == "annotation \"made up\": msomni_made_up_total");
  CHECK(outside[2] == "variable \"node\": node_uname_info");
}
