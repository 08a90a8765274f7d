// The node actor: it spawns the readers and replaces one that dies, watches the
// node's services, answers `stats` for the whole node, starts a batch actor per get
// and, on exit, stops every actor it knows.
#pragma once

#include <cstdint>
#include <functional>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/meter.hpp"
#include "messages/node.hpp"
#include "messages/store.hpp"

namespace spillway {

// How the supervisor makes reader number `index`. The node passes spawn_reader;
// deterministic tests pass an event-based fake behind the same interface.
using reader_factory = std::function<reader_actor(caf::actor_system&, std::uint32_t index)>;

// Started by the caller, in dependency order; the supervisor watches them and stops
// them on exit. Any may be null (tests).
struct node_services {
  catalog_actor catalog;
  writer_actor writer;
  registrar_actor registrar;
  arena_actor arena;
  meter_actor meter;
};

supervisor_actor spawn_supervisor(caf::actor_system& system, node_config config,
                                  reader_factory make_reader, node_services services);

}  // namespace spillway
