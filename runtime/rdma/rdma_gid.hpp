// Which GID of a port the queue pairs send from, and whether their address vector needs
// a GRH at all. A pure function of the port's GID table, so that the rule is tested on
// machines without a device; rdma_domain reads the table.
//
// transfer.rdma_gid_index = -1 (the default) follows perftest's convention:
// - InfiniBand: a peer in the subnet is addressed by its LID, so there is no GRH. The
//   port's first GID is still told to peers, as a RoCE port's is.
// - RoCE: the first GID of type RoCE v2 whose address is IPv4-mapped (::ffff:a.b.c.d).
//   RoCE v2 travels in UDP/IP, so it crosses routers, and nodes are configured with
//   IPv4 addresses; a RoCE v1 or link-local GID reaches only the same L2 segment. A
//   port with no such GID (IPv6 only, or RoCE v1 only) uses its first GID, the
//   link-local one at index 0 on the providers we know of; both peers pick by the
//   same rule, so they agree on the GID type.
// An index from 0 to 255 names the GID to use, and turns the GRH on for InfiniBand too
// (to reach a peer in another subnet).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace spillway {

struct rdma_gid_choice {
  std::uint8_t index = 0;
  ibv_gid gid{};
  bool global = false;  // the address vector carries a GRH from this GID
};

// `port` names the port in messages ("mlx5_0 port 1"); `table` holds its valid GIDs in
// index order, none above 255; `wanted` is transfer.rdma_gid_index. Throws
// rdma_setup_error when the table is empty, or `wanted` names an index it lacks (listing
// the ones it has).
rdma_gid_choice choose_gid(const std::string& port, std::uint8_t link_layer,
                           const std::vector<ibv_gid_entry>& table, std::int64_t wanted);

}  // namespace spillway
