// The node as a service (messages/service.hpp): the actor published on node.listen.
// Local callers' requests (get with arena addresses, stats) go on to the supervisor;
// remote ones are bounded here, before anything is allocated for them, and then served
// by the writer, the catalog, a value_fetch actor per values request, a get_into
// actor per get_into, which writes values into the client's memory through `transfer`,
// and a value_pull actor per pull, which reads them from there.
#pragma once

#include <chrono>
#include <memory>

#include <caf/fwd.hpp>

#include "messages/meter.hpp"
#include "messages/read.hpp"
#include "messages/service.hpp"
#include "messages/store.hpp"

namespace spillway {

class transfer_engine;

// Durations first: CAF 0.17 builds a state from `self` when it can, and a struct led by
// a typed handle can be.
struct service_context {
  std::chrono::milliseconds ask_timeout;    // the catalog's and the stats' answers
  std::chrono::milliseconds put_deadline;   // a put is answered once its bucket is sealed
  std::chrono::milliseconds read_deadline;  // a batch's own deadline, with room
  std::shared_ptr<transfer_engine> transfer;  // stopped, not destroyed, when the node stops
  node_actor supervisor;
  catalog_actor catalog;
  writer_actor writer;
  arena_actor arena;
  meter_actor meter;
};

service_actor spawn_service(caf::actor_system& system, service_context context);

}  // namespace spillway
