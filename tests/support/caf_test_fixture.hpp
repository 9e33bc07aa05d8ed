// Deterministic actor tests: an actor system on CAF's test_coordinator with manual time and
// the message catalog registered. Nothing runs until the test calls run()/advance().
#pragma once

#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/scheduler/test_coordinator.hpp>

namespace msomni::testing {

class test_system_config : public caf::actor_system_config {
 public:
  test_system_config() {
    register_catalog(*this);
    set("scheduler.policy", caf::atom("testing"));
    set("logger.verbosity", caf::atom("quiet"));
    set("logger.console-verbosity", caf::atom("quiet"));
  }
};

struct caf_test_fixture {
  test_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());

  // Runs every ready actor until all mailboxes are empty; returns messages handled.
  size_t run() { return sched.run(); }

  // Moves manual time forward, fires due timeouts, then runs to quiescence.
  size_t advance(caf::timespan d) {
    sched.advance_time(d);
    return run();
  }
};

}  // namespace msomni::testing
