// register_catalog: one call adds every catalog type to an actor system config.
#include "messages/catalog.hpp"

#include <caf/actor_system_config.hpp>

namespace msomni {

void register_catalog(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::msomni>();
}

caf::actor_system_config& configure_process(caf::actor_system_config& cfg, size_t threads, idle_threads idle) {
  register_catalog(cfg);
  cfg.set("scheduler.max-threads", threads);
  if (idle == idle_threads::park) cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  return cfg;
}

}  // namespace msomni
