// Metric families to and from the catalog message a process pushes (msg::metrics_report).
// The receiving side trusts nothing: a family must be in the catalog with its kind, labels
// must be the catalog's (or job/rank/node), and the report must stay within the bounds below;
// otherwise the whole report is refused with the reason, and the previous one stays.
#pragma once

#include "messages/metrics_messages.hpp"
#include "metrics/metrics_registry.hpp"

#include <prometheus/metric_family.h>

#include <optional>
#include <string>
#include <vector>

namespace msomni::metrics {

// Bounds on one report.
inline constexpr size_t max_report_families = 128;
inline constexpr size_t max_report_series = 8192;
inline constexpr size_t max_series_labels = 8;
inline constexpr size_t max_label_value_bytes = 200;
inline constexpr size_t max_histogram_buckets = 32;

msg::metrics_report to_report(const std::vector<prometheus::MetricFamily>& families, std::string source,
                              std::string rank, std::string node, uint64_t seq);

// The report's families with `identity` labels set on every series (replacing any the sender
// set), help texts from the catalog; nullopt with `why` when the report breaks a rule.
std::optional<std::vector<prometheus::MetricFamily>> from_report(const msg::metrics_report& report,
                                                                 const labels& identity, std::string& why);

// Sets `l` on every series of `families` (replacing a label of the same name).
void set_labels(std::vector<prometheus::MetricFamily>& families, const labels& l);

// Merges families of the same name (the series of all of them, in order), sorted by name.
std::vector<prometheus::MetricFamily> merge_families(std::vector<prometheus::MetricFamily> all);

}  // namespace msomni::metrics
