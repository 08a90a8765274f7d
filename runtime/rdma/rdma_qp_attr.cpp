#include "runtime/rdma/rdma_qp_attr.hpp"

#include <algorithm>

namespace spillway {
namespace {

// More READs in flight than a group's slices buy nothing; 16 is what ConnectX offers.
constexpr int rd_atomic_max = 16;

}  // namespace

rdma_port_settings port_settings_from(const ibv_device_attr& device, const ibv_port_attr& port,
                                      std::uint8_t port_num, const rdma_gid_choice& gid) {
  rdma_port_settings s;
  s.port = port_num;
  s.path_mtu = port.active_mtu;
  s.global = gid.global;
  s.gid_index = gid.index;
  const int depth = std::min({device.max_qp_rd_atom, device.max_qp_init_rd_atom, rd_atomic_max});
  s.max_rd_atomic = static_cast<std::uint8_t>(std::max(depth, 1));
  return s;
}

qp_transition init_transition(const rdma_port_settings& local) {
  qp_transition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = local.pkey_index;
  t.attr.port_num = local.port;
  t.attr.qp_access_flags = rdma_access_flags;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

qp_transition rtr_transition(const rdma_port_settings& local, const rdma_qp_info& remote) {
  qp_transition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = local.path_mtu;
  t.attr.dest_qp_num = remote.qp_num;
  t.attr.rq_psn = remote.psn;
  t.attr.max_dest_rd_atomic = local.max_rd_atomic;
  t.attr.min_rnr_timer = local.min_rnr_timer;
  t.attr.ah_attr.port_num = local.port;
  t.attr.ah_attr.dlid = remote.lid;
  if (local.global) {
    t.attr.ah_attr.is_global = 1;
    t.attr.ah_attr.grh.dgid = gid_from_halves(remote.gid_high, remote.gid_low);
    t.attr.ah_attr.grh.sgid_index = local.gid_index;
    t.attr.ah_attr.grh.hop_limit = rdma_hop_limit;
  }
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  return t;
}

qp_transition rts_transition(const rdma_port_settings& local, std::uint32_t local_psn) {
  qp_transition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.timeout = local.timeout;
  t.attr.retry_cnt = local.retry_cnt;
  t.attr.rnr_retry = local.rnr_retry;
  t.attr.sq_psn = local_psn;
  t.attr.max_rd_atomic = local.max_rd_atomic;
  t.mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

ibv_gid gid_from_halves(std::uint64_t high, std::uint64_t low) {
  ibv_gid gid{};
  for (int i = 0; i < 8; ++i) {
    gid.raw[i] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    gid.raw[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
  return gid;
}

void gid_to_halves(const ibv_gid& gid, std::uint64_t& high, std::uint64_t& low) {
  high = low = 0;
  for (int i = 0; i < 8; ++i) {
    high = (high << 8) | gid.raw[i];
    low = (low << 8) | gid.raw[8 + i];
  }
}

}  // namespace spillway
