// The node's routes to its clients' transfer hosts (client::register_memory): the
// first get_into or pull from a client connects to its host, later ones reuse the
// route, and a request naming a segment the route does not know yet (the client
// registered more memory since) asks the host for its segments again. Connecting blocks
// on the peer's answers, so this actor has a thread of its own; it is the one place the node calls
// transfer_engine::connect for a client.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "messages/service.hpp"

namespace spillway {

class transfer_engine;

// Spawned linked to `parent`, detached: it goes when the service does.
client_routes_actor spawn_client_routes(caf::local_actor* parent,
                                        std::shared_ptr<transfer_engine> engine);

}  // namespace spillway
