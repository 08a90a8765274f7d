// The three transitions of an RC queue pair, RESET -> INIT -> RTR -> RTS, as the
// ibv_qp_attr and attribute mask that ibv_modify_qp takes for each. Pure functions of
// the local port's settings and the peer's QP info, so that every field is checked by
// tests on machines without a device; rdma_queue_pair applies them.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "runtime/rdma/rdma_gid.hpp"
#include "runtime/rdma/rdma_qp_info.hpp"

namespace spillway {

// What the local port and device allow, and the RC timers spillway uses.
struct rdma_port_settings {
  std::uint8_t port = 1;
  std::uint16_t pkey_index = 0;
  ibv_mtu path_mtu = IBV_MTU_1024;
  // RoCE (an Ethernet link layer) addresses the peer by GID, so the address vector
  // needs a GRH; InfiniBand within a subnet addresses it by LID alone (rdma_gid.hpp).
  bool global = false;
  std::uint8_t gid_index = 0;
  std::uint8_t max_rd_atomic = 1;  // RDMA READs in flight, each way
  // Local ACK timeout 4.096 us * 2^14 = 67 ms, retried 7 times: a peer silent for
  // about half a second fails the work request (RETRY_EXC_ERR) instead of hanging.
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;       // 7 = retry forever; READ/WRITE never hit RNR anyway
  std::uint8_t min_rnr_timer = 12;  // 0.64 ms
};

// What a peer may do to memory regions and queue pairs: write and read them remotely;
// local write lets READ results land in the requester's own regions.
constexpr int rdma_access_flags =
  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// How far a routed RoCE v2 packet may travel; link-local peers need only 1.
constexpr std::uint8_t rdma_hop_limit = 64;

// Each requester sends READs, so both the initiator and responder depth take the
// smaller of the device's two limits, capped at what spillway ever keeps in flight.
rdma_port_settings port_settings_from(const ibv_device_attr& device, const ibv_port_attr& port,
                                      std::uint8_t port_num, const rdma_gid_choice& gid);

struct qp_transition {
  ibv_qp_attr attr{};
  int mask = 0;
};

// RESET -> INIT: port, pkey and what the peer may do to our memory regions.
qp_transition init_transition(const rdma_port_settings& local);
// INIT -> RTR: the path to `remote`'s QP and the PSN it starts sending from.
qp_transition rtr_transition(const rdma_port_settings& local, const rdma_qp_info& remote);
// RTR -> RTS: our own first PSN and the send side's timers.
qp_transition rts_transition(const rdma_port_settings& local, std::uint32_t local_psn);

// The 16 GID bytes (network order) and rdma_qp_info's two halves of them.
ibv_gid gid_from_halves(std::uint64_t high, std::uint64_t low);
void gid_to_halves(const ibv_gid& gid, std::uint64_t& high, std::uint64_t& low);

}  // namespace spillway
