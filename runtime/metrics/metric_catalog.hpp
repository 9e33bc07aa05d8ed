// Every metric family msomni exports, declared once: name, kind, help, labels and which
// process exports it. The registry refuses a family that is not listed here, the control
// process drops a pushed family that is not listed or does not match, docs/metrics.md lists
// the same families (a test compares them), and the Grafana dashboard may only name these.
// Naming follows Prometheus conventions: the msomni_ prefix, base units (_seconds, _bytes),
// _total for counters, ratios 0-1. Labels have bounded values (actor and message names come
// from the code, modality and stage are enums, rank and node from the job's membership).
#pragma once

#include "messages/metrics_messages.hpp"

#include <string_view>
#include <vector>

namespace msomni::metrics {

using metric_kind = msg::metric_kind;  // the catalog's kinds are the wire's

const char* to_string(metric_kind k);

struct family_spec {
  std::string_view name;
  metric_kind kind;
  std::string_view help;
  std::vector<std::string_view> labels;  // besides job, rank and node, which the control process adds
  std::string_view exported_by;          // "every process", "rank", "control", "scheduler"
  std::vector<double> buckets;           // histograms only: upper bounds, ascending
};

// All families, in documentation order.
const std::vector<family_spec>& metric_catalog();

// The family named `name`, or null.
const family_spec* find_family(std::string_view name);

// Labels the control process may add to pushed series: job, rank, node.
bool is_identity_label(std::string_view label);

}  // namespace msomni::metrics
