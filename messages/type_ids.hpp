// Every atom and message type of spillway, numbered once. Registering this block
// (register_message_types) lets the types cross the network through CAF's middleman;
// local sends would work without it.
#pragma once

#include <caf/type_id.hpp>

namespace caf {
class actor_system_config;
}

namespace spillway {
struct reader_stats;
struct node_stats;
void register_message_types(caf::actor_system_config& config);
}  // namespace spillway

CAF_BEGIN_TYPE_ID_BLOCK(spillway, caf::first_custom_type_id)
  CAF_ADD_ATOM(spillway, spillway, stats_atom, "stats")
  CAF_ADD_TYPE_ID(spillway, (spillway::reader_stats))
  CAF_ADD_TYPE_ID(spillway, (spillway::node_stats))
CAF_END_TYPE_ID_BLOCK(spillway)
