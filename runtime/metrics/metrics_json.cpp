// families_json (see metrics_json.hpp).
#include "metrics/metrics_json.hpp"

#include "core/json_number.hpp"

namespace msomni::metrics {

nlohmann::ordered_json families_json(const std::vector<prometheus::MetricFamily>& families) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& f : families) {
    auto& rows = out[f.name] = nlohmann::ordered_json::array();
    for (const auto& m : f.metric) {
      nlohmann::ordered_json row = nlohmann::ordered_json::object();
      auto& l = row["labels"] = nlohmann::ordered_json::object();
      for (const auto& label : m.label) l[label.name] = label.value;
      switch (f.type) {
        case prometheus::MetricType::Counter: put_number(row, "value", m.counter.value); break;
        case prometheus::MetricType::Gauge: put_number(row, "value", m.gauge.value); break;
        case prometheus::MetricType::Histogram:
          row["count"] = m.histogram.sample_count;
          put_number(row, "sum", m.histogram.sample_sum);
          break;
        default: break;
      }
      rows.push_back(std::move(row));
    }
  }
  return out;
}

}  // namespace msomni::metrics
