// register_catalog: one call adds every catalog type to an actor system config.
#include "messages/catalog.hpp"

#include <caf/actor_system_config.hpp>

namespace msomni {

void register_catalog(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::msomni>();
}

}  // namespace msomni
