// The node's routes to its clients' transfer hosts (client::register_memory): the
// first get_into from a client connects to its host, later ones reuse the route, and a
// request naming a segment the route does not know yet (the client registered more
// memory since) asks the host for its segments again. Connecting blocks on the peer's
// answers, so this actor has a thread of its own; it is the one place the node calls
// transfer_engine::connect for a client.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/type_ids.hpp"

namespace spillway {

class transfer_engine;

// connect(host, control port, segments the request names) -> the route's index, or an
// error that names the host and why it cannot be reached.
using client_routes_actor = caf::typed_actor<
  caf::replies_to<caf::connect_atom, std::string, std::uint16_t,
                  std::vector<std::uint64_t>>::with<std::uint32_t>>;

// Spawned linked to `parent`, detached: it goes when the service does.
client_routes_actor spawn_client_routes(caf::local_actor* parent,
                                        std::shared_ptr<transfer_engine> engine);

}  // namespace spillway
