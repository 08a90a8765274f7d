// What another process reaches in place of an actor of ours: a guard published on the
// control channel that relays the requests of the remote interface, and nothing else,
// to the actor behind it, and answers them itself. CAF 0.17.6 lets any peer of the
// middleman send any message to a published actor: an exit (exit_reason::kill cannot be
// trapped inside the actor), an error (which stops an actor by default), a link (whose
// exit comes when the peer goes), or a request of the local interface (the node
// actor's arena addresses, close). The guard drops every exit but its owner's, and
// ignores errors, links' exits and down messages, logging each dropped exit; and since
// it answers itself, the actor behind it never talks to a peer, so no peer learns its
// id (CAF registers every actor that sends to a peer, and a peer may then address it).
#pragma once

#include <functional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "messages/service.hpp"
#include "messages/transfer.hpp"

namespace spillway {

// The node service's guard: the remote interface only. `name` is for the log.
remote_node_actor spawn_exit_guard(caf::actor_system& system, const service_actor& inner,
                                   std::string name);

// The transfer host is published as itself, not behind a guard: it knows a peer by the
// node its requests come from (transport_host.hpp), and a relay would make every peer
// look like this node. It drops exits, errors and other messages as a guard does;
// `make` gives its behaviour.
transfer_host_actor spawn_exit_proof(
  caf::actor_system& system,
  std::function<transfer_host_actor::behavior_type(transfer_host_actor::pointer)> make,
  std::string name);

// The owner's stop: the one exit a guard (or an exit-proof actor) takes. Leaves the
// actor behind a guard running.
void stop_exit_guard(const caf::actor& guard);

}  // namespace spillway
