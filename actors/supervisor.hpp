// The node actor: it spawns the node's long-lived actors, replaces a reader that
// dies, answers `stats` for the whole node and, on exit, stops everything it started.
#pragma once

#include <cstdint>
#include <functional>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/node.hpp"

namespace spillway {

// How the supervisor makes reader number `index`. The node passes spawn_reader;
// deterministic tests pass an event-based fake behind the same interface.
using reader_factory = std::function<caf::actor(caf::actor_system&, std::uint32_t index)>;

node_actor spawn_supervisor(caf::actor_system& system, node_config config,
                            reader_factory make_reader);

}  // namespace spillway
