// The common base of msomni's actor shells: an event-based actor that, once told its name and
// its process's metrics registry, accounts for every message it handles (mailbox depth when it
// took the message, messages and handling time by message type, a histogram of handling
// times). Without a registry (metrics off) it costs one branch per message.
//
// Function-based actors take `accounted_actor*` instead of `caf::event_based_actor*`, or use
// `accounted_stateful_actor<State>`, and call account_as() first in their body.
#pragma once

#include "metrics/metrics_registry.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

namespace msomni::metrics {

class accounted_actor : public caf::event_based_actor {
 public:
  using caf::event_based_actor::event_based_actor;

  // Accounts under actor=`name` from now on (null registry: not at all).
  void account_as(std::string name, std::shared_ptr<metrics_registry> registry);

  caf::invoke_message_result consume(caf::mailbox_element& x) override;

  // Distinct message types accounted per actor; the rest share message="other".
  static constexpr size_t max_message_types = 48;

 private:
  struct per_type {
    uint16_t type_nr = 0;
    const std::type_info* type = nullptr;
    uint64_t atom = 0;
    prometheus::Counter* messages = nullptr;
    prometheus::Counter* seconds = nullptr;
  };
  per_type& entry_for(const caf::mailbox_element& x);
  per_type& add_entry(per_type key, const std::string& message);

  std::shared_ptr<metrics_registry> registry_;
  std::string name_;
  prometheus::Gauge* depth_ = nullptr;
  prometheus::Histogram* handling_ = nullptr;
  std::vector<per_type> types_;
};

template <class State>
using accounted_stateful_actor = caf::stateful_actor<State, accounted_actor>;

}  // namespace msomni::metrics
