// The node actor: it spawns the readers and replaces one that dies, watches the
// node's services (catalog, writer), answers `stats` for the whole node and, on
// exit, stops every one of them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/node.hpp"

namespace spillway {

// How the supervisor makes reader number `index`. The node passes spawn_reader;
// deterministic tests pass an event-based fake behind the same interface.
using reader_factory = std::function<caf::actor(caf::actor_system&, std::uint32_t index)>;

// `services` are started by the caller, in dependency order; the supervisor monitors
// them and forwards its exit to them.
node_actor spawn_supervisor(caf::actor_system& system, node_config config,
                            reader_factory make_reader, std::vector<caf::actor> services);

}  // namespace spillway
