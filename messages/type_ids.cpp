// The one place that hands the type-ID block to CAF; it must see every message header.
#include "messages/type_ids.hpp"

#include <caf/actor_system_config.hpp>

#include "messages/meter.hpp"
#include "messages/node.hpp"
#include "messages/read.hpp"
#include "messages/service.hpp"
#include "messages/store.hpp"
#include "messages/transfer.hpp"

namespace spillway {

void register_message_types(caf::actor_system_config& config) {
  config.add_message_types<caf::id_block::spillway>();
}

}  // namespace spillway
