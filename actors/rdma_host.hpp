// The owner's side of the rdma handshake: for each requester QP that connects, a QP of
// its own on one of this node's devices (in turn), moved to RTS towards it, and the
// answer the requester connects with: that QP's info and this node's segments with
// their rkeys on that device.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "messages/transfer.hpp"

namespace spillway {

class rdma_domain;
class segment_table;

// The QP made for a requester lives until that requester connects again (its old QP
// broke, or lacked a segment registered since) or goes down (a monitor), so a peer
// that leaves takes its QPs with it.
rdma_host_actor spawn_rdma_host(caf::actor_system& system,
                                std::shared_ptr<const rdma_domain> domain,
                                std::shared_ptr<const segment_table> segments);

}  // namespace spillway
