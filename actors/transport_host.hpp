// The owner's side of the control channel: tells each peer the segments exported to it
// and the data port, hands it the ticket its lanes are admitted with (lane_admission),
// checksums exported ranges so that tests and the bench can verify bytes that went to
// another process, and hands rdma handshakes of admitted peers to `rdma` (null unless
// transfer.transport is "rdma": then a handshake is a named error). A peer is known by
// its transfer identity: the CAF node its requests come from, as the middleman (TLS,
// where [security] enables it) gives it, never a value the peer puts in a message.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "messages/transfer.hpp"
#include "runtime/net/lane_admission.hpp"
#include "runtime/net/segment.hpp"

namespace spillway {

// This actor system's transfer identity: what node::transfer_identity() returns and
// what peers export segments to.
std::string transfer_identity(const caf::actor_system& system);
// The identity of the node `sender` (or `host`) lives on; empty for none.
std::string transfer_identity_of(const caf::strong_actor_ptr& sender);
std::string transfer_identity_of(const transfer_host_actor& host);

struct transport_host_settings {
  std::shared_ptr<const segment_table> segments;
  std::shared_ptr<lane_admission> admission;
  std::uint16_t data_port = 0;
  rdma_host_actor rdma;  // null unless transfer.transport is "rdma"
};

// Spawned and entered in this process's table of transfer hosts, which is how a `local`
// route finds the segment table of a peer in this very process (local_segments_of).
transfer_host_actor spawn_transport_host(caf::actor_system& system,
                                         transport_host_settings settings);

// The segment table of the transfer host `host` when that host runs in this process,
// else null: a remote peer cannot make this answer, since the table is filled only
// by spawn_transport_host here. Tables of hosts since stopped are gone.
std::shared_ptr<const segment_table> local_segments_of(const transfer_host_actor& host);

}  // namespace spillway
