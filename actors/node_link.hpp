// A client's link to one remote node: connects through the middleman without blocking,
// monitors the node, relays requests to it while connected and fails them at once as
// request_receiver_down while not: the requests in flight when the node goes, too (CAF
// would let them run to their timeout). It tries again after 20 ms, doubling to 1 s.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include "messages/service.hpp"

namespace spillway {

struct node_link_settings {
  std::chrono::milliseconds timeout;  // a request relayed, and a connection attempt
  std::string host;
  std::uint16_t port = 0;
};

node_link_actor spawn_node_link(caf::actor_system& system, node_link_settings settings);

}  // namespace spillway
