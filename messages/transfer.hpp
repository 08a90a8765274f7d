// The transfer engine's protocols (DESIGN.md "Transfer"). A caller asks a slicer to
// move a batch of requests and gets one status per request. The slicer hands slice
// groups to transports (one actor per lane or QP) and gets each group back with a
// status per slice. A segment's owner answers `describe` with its segments and data
// port, which is how peers exchange descriptors, and `checksum` over a range, which
// is how tests and the bench verify bytes that went to another process.
//
// Groups and batches carry raw pointers into this process's memory, so those two
// messages are local only; the owner's protocol crosses the network.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/stats.hpp"
#include "messages/type_ids.hpp"
#include "runtime/rdma/rdma_qp_info.hpp"
#include "runtime/net/segment.hpp"
#include "runtime/net/slice.hpp"
#include "runtime/net/slice_pool.hpp"

namespace spillway {

// A group lent to a transport until it answers with the same reference. `pool` keeps
// the slicer's pool alive while a lane still holds one of its groups at shutdown.
struct slice_group_ref {
  slice_group* group = nullptr;
  std::shared_ptr<slice_pool> pool;
};

using transfer_batch = std::vector<transfer_request>;

// One status per request, in order, and what the bench reports about the batch.
struct transfer_reply {
  std::vector<transfer_status> statuses;
  std::uint64_t slices = 0;
  std::uint64_t slicing_ns = 0;      // time spent cutting and posting
  std::uint64_t first_slice_ns = 0;  // submit -> a transport starts the first slice
  std::uint64_t slices_retried = 0;  // failed on a lane (or with it) and sent to the next
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_reply& x) {
  return f(x.statuses, x.slices, x.slicing_ns, x.first_slice_ns, x.slices_retried);
}

// What a segment owner tells a peer on its control channel: the segments exported to
// that peer (ids and lengths: no addresses, no rkeys), where its tcp lanes connect, and
// the peer's lane ticket (lane_admission.hpp): the route id and secret every lane's
// hello carries. Nothing here says where the owner's memory lies.
struct transfer_peer_info {
  std::vector<segment_descriptor> segments;
  std::uint16_t data_port = 0;
  std::uint64_t lane_route = 0;
  std::string lane_secret;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_peer_info& x) {
  return f(caf::meta::type_name("transfer_peer_info"), x.segments, x.data_port, x.lane_route,
           x.lane_secret);
}

// connect(requester's QP) -> the owner's QP, created for it and moved to RTS, with the
// owner's segments exported to that requester and their rkeys on that QP's device.
using rdma_host_actor =
  caf::typed_actor<caf::replies_to<caf::connect_atom, rdma_qp_info>::with<rdma_qp_info>>;

using transport_actor =
  caf::typed_actor<caf::replies_to<post_atom, slice_group_ref>::with<slice_group_ref>>;

// update: the peer's segments, which the slicer checks every request against.
// stats: what the slicer moved, retried and lost since it started.
using slicer_actor =
  caf::typed_actor<caf::replies_to<transfer_atom, transfer_batch>::with<transfer_reply>,
                   caf::reacts_to<caf::update_atom, std::vector<segment_descriptor>>,
                   caf::replies_to<stats_atom>::with<transfer_stats>>;

// A checksum request covers at most this: the owner computes it on a scheduler thread
// (a few ms at this size), over a range exported to the peer that asks.
constexpr std::uint64_t checksum_length_max = 64ull << 20;

// describe: the asking peer's view (above); its identity is the CAF node it asks from.
// checksum(segment, offset, length, crc): `crc` (a crc32c of earlier bytes, 0 for none)
// extended over that range, or an error: a range longer than checksum_length_max, or
// one not exported to the asking peer for reading. connect: the rdma handshake, handed
// to the owner's rdma host, for a peer that described first (holds a ticket); an error
// where the owner's transport is not rdma.
using transfer_host_actor = caf::typed_actor<
  caf::replies_to<describe_atom>::with<transfer_peer_info>,
  caf::replies_to<checksum_atom, std::uint64_t, std::uint64_t, std::uint64_t,
                  std::uint32_t>::with<std::uint32_t>,
  caf::replies_to<caf::connect_atom, rdma_qp_info>::with<rdma_qp_info>>;

}  // namespace spillway

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spillway::slice_group_ref)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spillway::transfer_batch)
