// One piece of a remote get_into (actors/get_into.hpp): reads its keys through a batch
// that hands them over in waves, writes each checked value into the client's memory
// through the route's slicer, and gives each wave's arena lease back once its
// transfer is done: never before, since a lane may still be sending from the extent.
// Not linked to the request: a piece outlives a request that answered at its deadline,
// until its last transfer is answered (a slicer answers every batch, even stopping).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "messages/node.hpp"
#include "messages/read.hpp"
#include "messages/service.hpp"

namespace spillway {

class transfer_engine;

// get(keys, placements, route): a status and size per key, once every transfer ended.
using value_push_actor = caf::typed_actor<
  caf::replies_to<caf::get_atom, std::vector<std::string>, std::vector<value_placement>,
                  std::uint32_t>::with<get_into_reply>,
  caf::reacts_to<wave_atom, get_reply>,
  caf::reacts_to<get_reply>>;

struct push_context {
  std::shared_ptr<transfer_engine> engine;  // first: see service_context
  node_actor supervisor;
  arena_actor arena;
};

value_push_actor spawn_value_push(caf::local_actor* parent, push_context context);

}  // namespace spillway
