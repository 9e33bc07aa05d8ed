// metrics_wire (see metrics_wire.hpp).
#include "metrics/metrics_wire.hpp"

#include "messages/training_messages.hpp"

#include <algorithm>
#include <map>

namespace msomni::metrics {

namespace {

prometheus::MetricType type_of(metric_kind k) {
  switch (k) {
    case metric_kind::counter: return prometheus::MetricType::Counter;
    case metric_kind::gauge: return prometheus::MetricType::Gauge;
    case metric_kind::histogram: return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

std::optional<metric_kind> kind_of(prometheus::MetricType t) {
  switch (t) {
    case prometheus::MetricType::Counter: return metric_kind::counter;
    case prometheus::MetricType::Gauge: return metric_kind::gauge;
    case prometheus::MetricType::Histogram: return metric_kind::histogram;
    default: return std::nullopt;
  }
}

msg::metric_series series_of(const prometheus::ClientMetric& m, metric_kind kind) {
  msg::metric_series s;
  for (const auto& l : m.label) {
    s.label_names.push_back(l.name);
    s.label_values.push_back(l.value);
  }
  double v = 0;
  if (kind == metric_kind::counter) v = m.counter.value;
  if (kind == metric_kind::gauge) v = m.gauge.value;
  if (kind == metric_kind::histogram) {
    s.count = m.histogram.sample_count;
    s.sum = m.histogram.sample_sum;
    for (const auto& b : m.histogram.bucket) {
      if (b.upper_bound > 1.7976931348623157e308) continue;  // +Inf is `count`
      s.bounds.push_back(b.upper_bound);
      s.cumulative.push_back(b.cumulative_count);
    }
  }
  s.value_kind = msg::kind_of(v);
  s.value = s.value_kind == msg::number_kind::finite ? v : 0;
  return s;
}

// Why `s` of family `spec` is not acceptable; empty when it is.
std::string series_problem(const family_spec& spec, const msg::metric_series& s) {
  if (s.label_names.size() != s.label_values.size()) return "label names and values differ in number";
  if (s.label_names.size() > max_series_labels) return "more than " + std::to_string(max_series_labels) + " labels";
  for (size_t i = 0; i < s.label_names.size(); ++i) {
    const auto& n = s.label_names[i];
    if (std::find(spec.labels.begin(), spec.labels.end(), n) == spec.labels.end() && !is_identity_label(n))
      return "label " + n + " is not one of " + std::string(spec.name) + "'s";
    if (s.label_values[i].size() > max_label_value_bytes) return "label " + n + " is longer than allowed";
  }
  if (static_cast<uint8_t>(s.value_kind) > static_cast<uint8_t>(msg::number_kind::negative_infinity)) return "unknown number kind";
  if (spec.kind == metric_kind::histogram) {
    if (s.bounds.size() != s.cumulative.size()) return "histogram bounds and counts differ in number";
    if (s.bounds.size() > max_histogram_buckets) return "too many histogram buckets";
    for (size_t i = 1; i < s.bounds.size(); ++i)
      if (!(s.bounds[i] > s.bounds[i - 1]) || s.cumulative[i] < s.cumulative[i - 1])
        return "histogram buckets are not ascending";
    if (!s.cumulative.empty() && s.cumulative.back() > s.count) return "histogram buckets exceed its count";
  } else if (!s.bounds.empty() || !s.cumulative.empty()) {
    return "buckets on a " + std::string(to_string(spec.kind));
  }
  return "";
}

prometheus::ClientMetric client_metric_of(const msg::metric_series& s, metric_kind kind, const labels& identity) {
  prometheus::ClientMetric m;
  std::map<std::string, std::string> l;
  for (size_t i = 0; i < s.label_names.size(); ++i) l[s.label_names[i]] = s.label_values[i];
  for (const auto& [k, v] : identity) l[k] = v;
  for (const auto& [k, v] : l) m.label.push_back({k, v});
  const double v = msg::value_of(s.value, s.value_kind);
  if (kind == metric_kind::counter) m.counter.value = v;
  if (kind == metric_kind::gauge) m.gauge.value = v;
  if (kind == metric_kind::histogram) {
    m.histogram.sample_count = s.count;
    m.histogram.sample_sum = s.sum;
    for (size_t i = 0; i < s.bounds.size(); ++i) m.histogram.bucket.push_back({s.cumulative[i], s.bounds[i]});
    m.histogram.bucket.push_back({s.count, __builtin_inf()});
  }
  return m;
}

}  // namespace

msg::metrics_report to_report(const std::vector<prometheus::MetricFamily>& families, std::string source,
                              std::string rank, std::string node, uint64_t seq) {
  msg::metrics_report r{std::move(source), std::move(rank), std::move(node), seq, {}};
  for (const auto& f : families) {
    const auto kind = kind_of(f.type);
    if (!kind) continue;
    msg::metric_family_series out{f.name, *kind, {}};
    for (const auto& m : f.metric) out.series.push_back(series_of(m, *kind));
    r.families.push_back(std::move(out));
  }
  return r;
}

std::optional<std::vector<prometheus::MetricFamily>> from_report(const msg::metrics_report& report,
                                                                 const labels& identity, std::string& why) {
  if (report.families.size() > max_report_families) {
    why = "more than " + std::to_string(max_report_families) + " families";
    return std::nullopt;
  }
  size_t total = 0;
  std::vector<prometheus::MetricFamily> out;
  for (const auto& f : report.families) {
    const auto* spec = find_family(f.name);
    if (!spec) {
      why = "family " + f.name + " is not in the metric catalog";
      return std::nullopt;
    }
    if (f.kind != spec->kind) {
      why = "family " + f.name + " is a " + to_string(spec->kind) + " in the catalog";
      return std::nullopt;
    }
    total += f.series.size();
    if (total > max_report_series) {
      why = "more than " + std::to_string(max_report_series) + " series";
      return std::nullopt;
    }
    prometheus::MetricFamily pf;
    pf.name = f.name;
    pf.help = std::string(spec->help);
    pf.type = type_of(spec->kind);
    for (const auto& s : f.series) {
      if (auto p = series_problem(*spec, s); !p.empty()) {
        why = f.name + ": " + p;
        return std::nullopt;
      }
      pf.metric.push_back(client_metric_of(s, spec->kind, identity));
    }
    out.push_back(std::move(pf));
  }
  return out;
}

void set_labels(std::vector<prometheus::MetricFamily>& families, const labels& l) {
  for (auto& f : families)
    for (auto& m : f.metric) {
      for (const auto& [k, v] : l) {
        auto it = std::find_if(m.label.begin(), m.label.end(), [&](const auto& x) { return x.name == k; });
        if (it != m.label.end()) it->value = v;
        else m.label.push_back({k, v});
      }
      std::sort(m.label.begin(), m.label.end());
    }
}

std::vector<prometheus::MetricFamily> merge_families(std::vector<prometheus::MetricFamily> all) {
  std::map<std::string, prometheus::MetricFamily> by_name;
  for (auto& f : all) {
    auto [it, fresh] = by_name.try_emplace(f.name, std::move(f));
    if (!fresh)
      it->second.metric.insert(it->second.metric.end(), std::make_move_iterator(f.metric.begin()),
                               std::make_move_iterator(f.metric.end()));
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto& [name, f] : by_name) out.push_back(std::move(f));
  return out;
}

}  // namespace msomni::metrics
