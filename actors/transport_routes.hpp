// A route: what it takes to move data to one peer. The slicers callers submit
// batches to, the lanes they share, and the peer's descriptors. For `tcp` and `rdma`
// the descriptors (and tcp's data port) come from the peer's transfer host, by
// message; so does each rdma queue pair's handshake.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/transfer.hpp"
#include "runtime/net/segment.hpp"

namespace spillway {

class rdma_domain;

struct transfer_route {
  std::vector<slicer_actor> slicers;    // transfer.slicers of them, sharing the lanes
  std::vector<transport_actor> lanes;
  transfer_peer_info peer;
  transfer_host_actor host;             // tcp, rdma, local peer: the peer's control actor
  std::size_t next_slicer = 0;

  // The slicer for the next batch, in turn.
  const slicer_actor& pick() { return slicers[next_slicer++ % slicers.size()]; }
};

// Memory in this process: one local lane over `segments`, as this node's identity.
transfer_route open_local_route(caf::actor_system& system, const transfer_section& transfer,
                                std::shared_ptr<const segment_table> segments);

// The peer whose transfer host is published on host:control_port: asks it for its
// descriptors and data port, then opens transfer.tcp_lanes lanes. Throws
// std::runtime_error when the peer cannot be reached or does not answer.
transfer_route open_tcp_route(caf::actor_system& system, const transfer_section& transfer,
                              const std::string& host, std::uint16_t control_port);

// The same peer over RDMA: transfer.rdma_qps queue pairs, spread over `domain`'s
// devices, each connecting itself to the peer's transfer host on its first group.
// Throws std::runtime_error when the peer cannot be reached or does not answer.
transfer_route open_rdma_route(caf::actor_system& system, const transfer_section& transfer,
                               const std::string& host, std::uint16_t control_port,
                               std::shared_ptr<const rdma_domain> domain);

// The same peer reached by the `local` transport: its transfer host must be in this
// process (local_segments_of finds it), for the lane to copy through its segment table.
// Throws std::runtime_error otherwise.
transfer_route open_local_peer_route(caf::actor_system& system, const transfer_section& transfer,
                                     const std::string& host, std::uint16_t control_port);

// The descriptors and data port of the peer whose transfer host is `host`, asked
// again. Throws std::runtime_error when the peer does not answer.
transfer_peer_info describe_peer(caf::actor_system& system, const transfer_section& transfer,
                                 const transfer_host_actor& host);

// Hands a route's slicers the peer's descriptors as describe_peer gave them again:
// segments the peer registered since the route opened become reachable.
void refresh_route(transfer_route& route, transfer_peer_info peer);

// The transfer host published on host:control_port. Throws std::runtime_error.
transfer_host_actor remote_transfer_host(caf::actor_system& system, const std::string& host,
                                         std::uint16_t control_port);

// crc32c of a range of a peer's segment, asked of its transfer host: how bytes that
// went to another process are verified, asked in requests of at most
// checksum_length_max bytes. Throws std::runtime_error.
std::uint32_t range_checksum(caf::actor_system& system, const transfer_host_actor& host,
                             std::uint64_t segment, std::uint64_t offset,
                             std::uint64_t length);

// Stops the route's slicers and lanes. Each slicer answers its batches (what was not
// sent: `unavailable`) once its lanes gave back every group, then quits.
void close_route(transfer_route& route);

}  // namespace spillway
