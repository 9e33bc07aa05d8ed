// spawn_metrics_pusher (see metrics_pusher.hpp).
#include "metrics/metrics_pusher.hpp"

#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_wire.hpp"

#include <caf/actor_system.hpp>

namespace msomni::metrics {

namespace {

using push_atom = caf::atom_constant<caf::atom("mpush")>;

caf::behavior pusher(accounted_actor* self, std::shared_ptr<metrics_registry> registry, msg::orchestrator_actor target,
                     push_identity who, std::chrono::milliseconds interval) {
  self->account_as("metrics_pusher", registry);
  self->monitor(target);
  self->set_down_handler([self](caf::down_msg&) { self->quit(); });
  self->send(self, push_atom::value);
  return {
      [=](push_atom) {
        // The sender's wall clock orders its reports, also across a restart under the same name.
        const auto seq = static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count());
        self->send(target, to_report(registry->collect(), who.source, who.rank, who.node, seq));
        self->delayed_send(self, interval, push_atom::value);
      },
  };
}

}  // namespace

caf::actor spawn_metrics_pusher(caf::actor_system& sys, std::shared_ptr<metrics_registry> registry,
                                msg::orchestrator_actor target,
                                push_identity who, std::chrono::milliseconds interval) {
  return sys.spawn(pusher, std::move(registry), std::move(target), std::move(who), interval);
}

}  // namespace msomni::metrics
