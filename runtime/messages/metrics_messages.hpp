// Metric samples that a process pushes to the control process, which serves them on /metrics
// for the whole job (no port per rank). Plain structs, no CAF: what CAF needs to carry them is
// in metrics_messages_inspect.hpp, which the catalog includes.
#pragma once

#include "messages/training_messages.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::msg {

// What a metric family is (Prometheus' three types msomni uses).
enum class metric_kind : uint8_t { counter = 0, gauge = 1, histogram = 2 };

// One series of a family: its labels as name/value pairs, its value (counter, gauge) or its
// histogram (cumulative counts per upper bound, the +Inf bucket being `count`).
struct metric_series {
  std::vector<std::string> label_names;
  std::vector<std::string> label_values;
  double value = 0;
  number_kind value_kind = number_kind::finite;  // NaN and infinities survive the wire
  uint64_t count = 0;
  double sum = 0;
  std::vector<double> bounds;
  std::vector<uint64_t> cumulative;
  bool operator==(const metric_series&) const = default;
};

// The series of one catalog family (metrics/metric_catalog.hpp); `kind` is its metric_kind.
struct metric_family_series {
  std::string name;
  metric_kind kind = metric_kind::counter;
  std::vector<metric_series> series;
  bool operator==(const metric_family_series&) const = default;
};

// rank/agent -> orchestrator, every metrics push interval while metrics are on: the whole of
// the sender's registry. Idempotent: the newest report of a source replaces the previous one.
// `source` is the rank's name or the agent's node; `rank` is empty for an agent.
struct metrics_report {
  std::string source;
  std::string rank;
  std::string node;
  uint64_t seq = 0;
  std::vector<metric_family_series> families;
  bool operator==(const metrics_report&) const = default;
};

}  // namespace msomni::msg
