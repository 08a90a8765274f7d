// The node actor's protocol: what embedders, operators' tools and peer nodes ask of a
// node. Published on node.listen, so every type here is in the type-ID block.
#pragma once

#include <caf/typed_actor.hpp>
#include <caf/replies_to.hpp>

#include "messages/stats.hpp"
#include "messages/type_ids.hpp"

namespace spillway {

using node_actor = caf::typed_actor<caf::replies_to<stats_atom>::with<node_stats>>;

}  // namespace spillway
