// The node actor's protocol: what embedders, operators' tools and peer nodes ask of a
// node. Published on node.listen, so every type here is in the type-ID block.
// get(keys, mode, waves) answers with addresses in the node's arena: for callers in this
// process. `mode` is "window" or "group" for this batch alone, "" for read.mode; with
// `waves`, keys may come early in wave messages, to be copied out and released.
// The supervisor answers one more, for callers in this process only (so not in
// node_actor, which the service extends and publishes): get(keys, targets), a get with
// waves for a caller that wants keys[i] at targets[i] (node::get_batch_into). A value may
// land there in place (actors/batch.cpp); an item whose address is its target's needs
// no copy.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/read.hpp"
#include "messages/stats.hpp"
#include "messages/type_ids.hpp"

namespace spillway {

using node_actor = caf::typed_actor<
  caf::replies_to<stats_atom>::with<node_stats>,
  caf::replies_to<caf::get_atom, std::vector<std::string>, std::string, bool>::with<get_reply>>;

using supervisor_actor = node_actor::extend<
  caf::replies_to<caf::get_atom, std::vector<std::string>, std::vector<read_target>>::with<
    get_reply>>;

}  // namespace spillway
