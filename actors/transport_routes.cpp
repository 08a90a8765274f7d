#include "actors/transport_routes.hpp"

#include <chrono>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/local_transport.hpp"
#include "actors/rdma_transport.hpp"
#include "actors/slicer.hpp"
#include "actors/tcp_transport.hpp"
#include "actors/transport_host.hpp"
#include "runtime/control_channel.hpp"
#include "runtime/rdma/rdma_domain.hpp"

namespace spillway {
namespace {

// A checksum request reads at most checksum_length_max bytes on the peer.
constexpr std::chrono::seconds checksum_timeout{10};

void spawn_slicers(caf::actor_system& system, const transfer_section& transfer,
                   transfer_route& route) {
  const auto count = std::max<std::uint64_t>(transfer.slicers, 1);  // 0: not resolved
  for (std::uint64_t i = 0; i < count; ++i)
    route.slicers.push_back(spawn_slicer(system, slicer_options_from(transfer), route.lanes,
                                         route.peer.segments));
}

// Connects to the peer's transfer host and asks it for its descriptors: the exchange
// by message that every route to a peer starts with.
void reach_peer(caf::actor_system& system, const transfer_section& transfer,
                const std::string& host, std::uint16_t control_port, transfer_route& route) {
  route.host = remote_transfer_host(system, host, control_port);
  route.peer = describe_peer(system, transfer, route.host);
}

}  // namespace

transfer_route open_local_route(caf::actor_system& system, const transfer_section& transfer,
                                std::shared_ptr<const segment_table> segments) {
  transfer_route route;
  const auto self = transfer_identity(system);
  route.peer.segments = segments->list_for(self, true, false);
  route.lanes.push_back(spawn_local_transport(system, std::move(segments), true, self));
  spawn_slicers(system, transfer, route);
  return route;
}

transfer_route open_tcp_route(caf::actor_system& system, const transfer_section& transfer,
                              const std::string& host, std::uint16_t control_port) {
  const std::chrono::milliseconds timeout{transfer.slice_timeout_ms};
  transfer_route route;
  reach_peer(system, transfer, host, control_port, route);
  for (std::uint64_t i = 0; i < transfer.tcp_lanes; ++i)
    route.lanes.push_back(spawn_tcp_transport(system, host, route.peer.data_port, timeout,
                                              {route.peer.lane_route, route.peer.lane_secret}));
  spawn_slicers(system, transfer, route);
  return route;
}

transfer_route open_rdma_route(caf::actor_system& system, const transfer_section& transfer,
                               const std::string& host, std::uint16_t control_port,
                               std::shared_ptr<const rdma_domain> domain) {
  transfer_route route;
  reach_peer(system, transfer, host, control_port, route);
  for (std::uint64_t i = 0; i < transfer.rdma_qps; ++i) {
    // A group of `watermark` slices fits the send queue at once, where the device allows.
    rdma_lane_options lane{domain, i % domain->devices(), route.host,
                           std::chrono::milliseconds{transfer.slice_timeout_ms},
                           static_cast<std::uint32_t>(transfer.watermark)};
    route.lanes.push_back(spawn_rdma_transport(system, std::move(lane)));
  }
  spawn_slicers(system, transfer, route);
  return route;
}

// The peer must be in this process: its segment table is found in this process's table
// of transfer hosts (local_segments_of), which no remote peer can fill, and the lane
// copies through that table, with its export checks, never through addresses a peer
// sent.
transfer_route open_local_peer_route(caf::actor_system& system, const transfer_section& transfer,
                                     const std::string& host, std::uint16_t control_port) {
  transfer_route reached;
  reach_peer(system, transfer, host, control_port, reached);
  auto segments = local_segments_of(reached.host);
  if (!segments)
    throw std::runtime_error("transfer peer " + host + ":" + std::to_string(control_port) +
                             " is another process: transfer.transport = \"local\" only "
                             "reaches segments in this one; use \"tcp\"");
  auto route = open_local_route(system, transfer, std::move(segments));
  route.peer = std::move(reached.peer);
  route.host = std::move(reached.host);
  return route;
}

transfer_peer_info describe_peer(caf::actor_system& system, const transfer_section& transfer,
                                 const transfer_host_actor& host) {
  const std::chrono::milliseconds timeout{transfer.slice_timeout_ms};
  caf::scoped_actor self{system};
  transfer_peer_info info;
  caf::error failure;
  self->request(host, timeout, describe_atom_v)
    .receive([&](transfer_peer_info& answer) { info = std::move(answer); },
             [&](caf::error& err) { failure = std::move(err); });
  if (failure) throw std::runtime_error("describe: " + system.render(failure));
  return info;
}

void refresh_route(transfer_route& route, transfer_peer_info peer) {
  route.peer = std::move(peer);
  // Sent before any batch the caller submits after this returns, from this thread, so
  // each slicer's mailbox has the update first.
  for (const auto& slicer : route.slicers)
    caf::anon_send(slicer, caf::update_atom_v, route.peer.segments);
}

transfer_host_actor remote_transfer_host(caf::actor_system& system, const std::string& host,
                                         std::uint16_t control_port) {
  auto remote = connect_transfer_host(system, host, control_port);
  if (!remote)
    throw std::runtime_error("transfer peer " + host + ":" + std::to_string(control_port) +
                             ": " + system.render(remote.error()));
  return *remote;
}

std::uint32_t range_checksum(caf::actor_system& system, const transfer_host_actor& host,
                             std::uint64_t segment, std::uint64_t offset,
                             std::uint64_t length) {
  caf::scoped_actor self{system};
  std::uint32_t crc = 0;
  caf::error failure;
  std::uint64_t done = 0;
  do {  // once at least: an empty range is checked against the segment too
    const auto part = std::min(length - done, checksum_length_max);
    self->request(host, checksum_timeout, checksum_atom_v, segment, offset + done, part, crc)
      .receive([&](std::uint32_t c) { crc = c; }, [&](caf::error& err) { failure = err; });
    done += part;
  } while (!failure && done < length);
  if (failure) throw std::runtime_error("checksum: " + system.render(failure));
  return crc;
}

void close_route(transfer_route& route) {
  for (const auto& s : route.slicers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  for (const auto& l : route.lanes) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  route.slicers.clear();
  route.lanes.clear();
  route.host = nullptr;
}

}  // namespace spillway
