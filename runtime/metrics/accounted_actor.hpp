// The common base of msomni's actor shells: an event-based actor (dynamically or statically
// typed) that, once told its name and its process's metrics registry, accounts for every
// message it handles (mailbox depth when it took the message, messages and handling time by
// message type, a histogram of handling times). Without a registry (metrics off) it costs
// one branch per message.
//
// Function-based actors take `accounted_actor*` instead of `caf::event_based_actor*`,
// `accounted_typed_actor<Sigs...>*` (or `accounted<Interface::base>*`, see
// messages/actor_interfaces.hpp) instead of `caf::typed_event_based_actor<Sigs...>*`, or use
// `accounted_stateful_actor<State>`, and call account_as() first in their body.
#pragma once

#include "metrics/metrics_registry.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

namespace msomni::metrics {

// The series one actor accounts under, and the lookup of a message's type among them.
class message_accounting {
 public:
  void account_as(std::string name, std::shared_ptr<metrics_registry> registry);
  bool on() const { return registry_ != nullptr; }

  // Counts `x` (before it is handled: a reply sent while handling it may reach its requester,
  // and be followed by a scrape, before this returns), runs `handle` and times it.
  template <class Handle>
  caf::invoke_message_result around(caf::mailbox_element& x, size_t depth, caf::actor_system& sys, Handle handle) {
    depth_->Set(static_cast<double>(depth));
    auto& entry = entry_for(x, sys);
    entry.messages->Increment();
    const auto start = std::chrono::steady_clock::now();
    const auto result = handle();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    entry.seconds->Increment(seconds);
    handling_->Observe(seconds);
    return result;
  }

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
  per_type& entry_for(const caf::mailbox_element& x, caf::actor_system& sys);
  per_type& add_entry(per_type key, const std::string& message);

  std::shared_ptr<metrics_registry> registry_;
  std::string name_;
  prometheus::Gauge* depth_ = nullptr;
  prometheus::Histogram* handling_ = nullptr;
  std::vector<per_type> types_;
};

// `Base` (caf::event_based_actor or a caf::typed_event_based_actor) with its messages accounted.
template <class Base>
class accounted : public Base {
 public:
  using Base::Base;

  // Accounts under actor=`name` from now on (null registry: not at all).
  void account_as(std::string name, std::shared_ptr<metrics_registry> registry) {
    accounting_.account_as(std::move(name), std::move(registry));
  }

  caf::invoke_message_result consume(caf::mailbox_element& x) override {
    if (!accounting_.on()) return Base::consume(x);
    return accounting_.around(x, this->mailbox().queue().total_task_size(), this->system(),
                              [&] { return Base::consume(x); });
  }

 private:
  message_accounting accounting_;
};

using accounted_actor = accounted<caf::event_based_actor>;

template <class... Sigs>
using accounted_typed_actor = accounted<caf::typed_event_based_actor<Sigs...>>;

template <class State>
using accounted_stateful_actor = caf::stateful_actor<State, accounted_actor>;

}  // namespace msomni::metrics
