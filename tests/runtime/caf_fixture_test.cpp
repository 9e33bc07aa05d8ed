// The deterministic actor fixture: manual time on CAF's test coordinator.
#include "support/caf_test_fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <memory>

using namespace std::chrono_literals;
namespace msg = msomni::msg;

namespace {

struct received {
  int heartbeats = 0;
  uint64_t last_seq = 0;
};

// Sends itself a heartbeat ten minutes after it starts.
caf::behavior delayed_heartbeat(caf::event_based_actor* self, std::shared_ptr<received> log) {
  self->delayed_send(self, std::chrono::minutes(10), msg::heartbeat{"n", 0, 1, 99, 0});
  return {
      [=](const msg::heartbeat& hb) {
        ++log->heartbeats;
        log->last_seq = hb.seq;
      },
  };
}

}  // namespace

TEST_CASE_FIXTURE(msomni::testing::caf_test_fixture, "manual time drives delayed messages") {
  auto log = std::make_shared<received>();
  auto actor = sys.spawn(delayed_heartbeat, log);
  run();
  CHECK(log->heartbeats == 0);
  advance(9min);
  CHECK(log->heartbeats == 0);
  advance(1min);
  CHECK(log->heartbeats == 1);
  CHECK(log->last_seq == 99);
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  run();
}
