// Metric families as JSON, for `msomni inspect` (the control process answers its "inspect"
// request with them): {"FAMILY": [{"labels": {...}, "value": V}, ...], ...}, histograms with
// "count" and "sum" instead of "value". Non-finite values follow core/json_number.hpp.
#pragma once

#include <nlohmann/json.hpp>
#include <prometheus/metric_family.h>

#include <vector>

namespace msomni::metrics {

nlohmann::ordered_json families_json(const std::vector<prometheus::MetricFamily>& families);

}  // namespace msomni::metrics
