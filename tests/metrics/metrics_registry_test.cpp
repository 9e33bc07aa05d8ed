// The metric catalog's conventions, the registry's refusals, and reports across the wire.
#include "metrics/metric_catalog.hpp"
#include "metrics/metrics_registry.hpp"
#include "metrics/metrics_wire.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace msomni;
using namespace msomni::metrics;

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const prometheus::ClientMetric* find_series(const std::vector<prometheus::MetricFamily>& fams, const std::string& name,
                                            const labels& want) {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      size_t hit = 0;
      for (const auto& l : m.label)
        if (auto it = want.find(l.name); it != want.end() && it->second == l.value) ++hit;
      if (hit == want.size()) return &m;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("every catalog family follows the Prometheus naming conventions") {
  std::set<std::string_view> names;
  for (const auto& f : metric_catalog()) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
    CHECK(f.name.rfind("msomni_", 0) == 0);
    CHECK(std::regex_match(std::string(f.name), std::regex("[a-z_][a-z0-9_]*")));
    CHECK(ends_with(f.name, "_total") == (f.kind == metric_kind::counter));
    CHECK(!f.help.empty());
    CHECK(!f.exported_by.empty());
    if (f.kind == metric_kind::histogram) {
      CHECK(ends_with(f.name, "_seconds"));
      CHECK(!f.buckets.empty());
      CHECK(std::is_sorted(f.buckets.begin(), f.buckets.end()));
    } else {
      CHECK(f.buckets.empty());
    }
    // No unit other than the base ones, and no label the control process adds itself.
    for (const char* bad : {"_ms", "_milliseconds", "_mb", "_kb", "_percent"}) CHECK(f.name.find(bad) == std::string::npos);
    for (const auto& l : f.labels) CHECK(!(l == "rank" || l == "node"));
  }
}

TEST_CASE("docs/metrics.md documents exactly the catalog, one line per family") {
  std::ifstream in(std::string(MSOMNI_SOURCE_DIR) + "/docs/metrics.md");
  REQUIRE(in.good());
  std::set<std::string> documented;
  const std::regex row("^\\| `(msomni_[a-z0-9_]+)` \\|");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) CHECK_MESSAGE(documented.insert(m[1]).second, "listed twice: " << m[1]);
  }
  std::set<std::string> catalog;
  for (const auto& f : metric_catalog()) catalog.insert(std::string(f.name));
  for (const auto& n : catalog) CHECK_MESSAGE(documented.count(n), "not documented: " << n);
  for (const auto& n : documented) CHECK_MESSAGE(catalog.count(n), "documented but not exported: " << n);
}

TEST_CASE("the registry refuses families outside the catalog, of another kind, or with foreign labels") {
  metrics_registry r;
  CHECK_THROWS_AS(r.counter("msomni_no_such_total"), std::logic_error);
  CHECK_THROWS_AS(r.gauge("msomni_rank_steps_total"), std::logic_error);
  CHECK_THROWS_AS(r.counter("msomni_data_samples_total", {{"colour", "red"}}), std::logic_error);
  CHECK_NOTHROW(r.counter("msomni_data_samples_total", {{"modality", "image"}}));
}

TEST_CASE("a series looked up twice is the same series") {
  metrics_registry r;
  auto& a = r.counter("msomni_data_samples_total", {{"modality", "image"}});
  auto& b = r.counter("msomni_data_samples_total", {{"modality", "image"}});
  CHECK(&a == &b);
  a.Increment(2);
  CHECK(b.Value() == 2);
}

TEST_CASE("a removed gauge series is no longer collected, the family's others stay") {
  metrics_registry r;
  r.gauge("msomni_memory_forecast_bytes", {{"target", "rank-0"}}).Set(1);
  r.gauge("msomni_memory_forecast_bytes", {{"target", "rank-1"}}).Set(2);
  r.remove_gauge("msomni_memory_forecast_bytes", {{"target", "rank-0"}});
  r.remove_gauge("msomni_memory_forecast_bytes", {{"target", "rank-9"}});  // none: nothing happens
  const auto fams = r.collect();
  CHECK_FALSE(find_series(fams, "msomni_memory_forecast_bytes", {{"target", "rank-0"}}));
  REQUIRE(find_series(fams, "msomni_memory_forecast_bytes", {{"target", "rank-1"}}));
  CHECK(find_series(fams, "msomni_memory_forecast_bytes", {{"target", "rank-1"}})->gauge.value == 2);
  CHECK_THROWS_AS(r.remove_gauge("msomni_rank_steps_total", {}), std::logic_error);
}

TEST_CASE("refreshers run before each collection until their handle goes") {
  metrics_registry r;
  int runs = 0;
  {
    auto h = r.add_refresher([&] {
      ++runs;
      r.gauge("msomni_rank_step").Set(runs);
    });
    auto fams = r.collect();
    CHECK(runs == 1);
    REQUIRE(find_series(fams, "msomni_rank_step", {}));
    CHECK(find_series(fams, "msomni_rank_step", {})->gauge.value == 1);
  }
  (void)r.collect();
  CHECK(runs == 1);
}

TEST_CASE("a report carries counters, gauges and histograms, and the receiver labels them") {
  metrics_registry r;
  r.counter("msomni_data_samples_total", {{"modality", "video"}}).Increment(7);
  r.gauge("msomni_rank_loss").Set(__builtin_nan(""));
  auto& h = r.histogram("msomni_rank_step_seconds");
  h.Observe(0.02);
  h.Observe(0.3);
  h.Observe(500);
  const auto report = to_report(r.collect(), "rank-1", "rank-1", "node-a", 5);
  std::string why;
  const auto back = from_report(report, {{"job", "j"}, {"rank", "rank-1"}, {"node", "node-a"}}, why);
  REQUIRE_MESSAGE(back, why);
  const auto* c = find_series(*back, "msomni_data_samples_total", {{"modality", "video"}, {"rank", "rank-1"}, {"job", "j"}});
  REQUIRE(c);
  CHECK(c->counter.value == 7);
  const auto* loss = find_series(*back, "msomni_rank_loss", {{"node", "node-a"}});
  REQUIRE(loss);
  CHECK(loss->gauge.value != loss->gauge.value);  // NaN survived
  const auto* hist = find_series(*back, "msomni_rank_step_seconds", {});
  REQUIRE(hist);
  CHECK(hist->histogram.sample_count == 3);
  CHECK(hist->histogram.sample_sum == doctest::Approx(500.32));
  CHECK(hist->histogram.bucket.back().cumulative_count == 3);  // +Inf
  CHECK(hist->histogram.bucket.size() == find_family("msomni_rank_step_seconds")->buckets.size() + 1);
}

TEST_CASE("a report that breaks a rule is refused whole, with the reason") {
  metrics_registry r;
  r.counter("msomni_data_samples_total", {{"modality", "video"}}).Increment();
  r.histogram("msomni_rank_step_seconds").Observe(1);
  const auto good = to_report(r.collect(), "rank-1", "rank-1", "n", 1);
  std::string why;
  REQUIRE(from_report(good, {}, why));
  const auto refused = [&](msg::metrics_report rep, const std::string& words) {
    std::string reason;
    CHECK_FALSE(from_report(rep, {}, reason));
    CHECK_MESSAGE(reason.find(words) != std::string::npos, reason);
  };
  auto unknown = good;
  unknown.families[0].name = "msomni_made_up_total";
  refused(unknown, "not in the metric catalog");
  auto kind = good;
  for (auto& f : kind.families) f.kind = metric_kind::gauge;
  refused(kind, "in the catalog");
  auto label = good;
  for (auto& f : label.families)
    if (f.name == "msomni_data_samples_total") f.series[0].label_names[0] = "colour";
  refused(label, "label colour");
  auto hist = good;
  for (auto& f : hist.families)
    if (f.name == "msomni_rank_step_seconds") std::swap(f.series[0].bounds[0], f.series[0].bounds[1]);
  refused(hist, "not ascending");
  auto many = good;
  many.families.resize(max_report_families + 1, good.families[0]);
  refused(many, "families");
}
