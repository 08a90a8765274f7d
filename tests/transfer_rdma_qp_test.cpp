// RDMA queue pairs without a device: the ibv_qp_attr and attribute mask of each
// transition checked field by field (InfiniBand by LID, RoCE by GID), the port
// settings taken from what a device reports, what each work completion status means
// for its slice, and that opening the devices on a machine without one is the error
// that names tcp.
#include <doctest/doctest.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "runtime/rdma/rdma_completion.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "runtime/rdma/rdma_domain.hpp"
#include "runtime/rdma/rdma_qp_attr.hpp"
#include "runtime/rdma/rdma_selection.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

// A port as a device would report it, with a GID table of four entries, through
// choose_gid (transfer.rdma_gid_index = `gid_index`) and port_settings_from.
rdma_port_settings settings_of(std::uint8_t link_layer, ibv_mtu mtu, int rd_atom, int init_rd_atom,
                               std::uint8_t port_num, std::int64_t gid_index) {
  ibv_device_attr device{};
  device.max_qp_rd_atom = rd_atom;
  device.max_qp_init_rd_atom = init_rd_atom;
  ibv_port_attr port{};
  port.active_mtu = mtu;
  port.link_layer = link_layer;
  std::vector<ibv_gid_entry> table(4);
  for (std::uint32_t i = 0; i < table.size(); ++i) {
    table[i].gid_index = i;
    table[i].gid_type =
      link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
  }
  return port_settings_from(device, port, port_num,
                            choose_gid("test port", link_layer, table, gid_index));
}

rdma_port_settings infiniband() {
  return settings_of(IBV_LINK_LAYER_INFINIBAND, IBV_MTU_4096, 16, 8, 2, -1);
}

rdma_port_settings roce() {
  return settings_of(IBV_LINK_LAYER_ETHERNET, IBV_MTU_1024, 64, 64, 1, 3);
}

const rdma_qp_info peer{0x00abcd, 0x123456, 0x17, 1, 0xfe80000000000000, 0x0202c9fffe0a0b0c, {}};

TEST_SUITE("transfer-rdma") {

TEST_CASE("rdma port settings come from the port and the device's smaller READ depth") {
  const auto ib = infiniband();
  CHECK(ib.port == 2);
  CHECK(ib.path_mtu == IBV_MTU_4096);
  CHECK_FALSE(ib.global);
  CHECK(ib.max_rd_atomic == 8);
  const auto eth = roce();
  CHECK(eth.global);
  CHECK(eth.gid_index == 3);
  CHECK(eth.path_mtu == IBV_MTU_1024);
  CHECK(eth.max_rd_atomic == 16);  // capped
  // A device that reports no READ depth still gets one.
  CHECK(settings_of(IBV_LINK_LAYER_INFINIBAND, IBV_MTU_256, 0, 0, 1, -1).max_rd_atomic == 1);
}

TEST_CASE("rdma on InfiniBand takes a GRH only when a GID index is named") {
  const auto named = settings_of(IBV_LINK_LAYER_INFINIBAND, IBV_MTU_4096, 16, 8, 1, 2);
  CHECK(named.global);
  CHECK(named.gid_index == 2);
  const auto t = rtr_transition(named, peer);
  CHECK(t.attr.ah_attr.is_global == 1);
  CHECK(t.attr.ah_attr.grh.sgid_index == 2);
  CHECK(t.attr.ah_attr.dlid == 0x17);
}

TEST_CASE("rdma INIT sets port and pkey and lets the peer read and write") {
  const auto t = init_transition(infiniband());
  CHECK(t.attr.qp_state == IBV_QPS_INIT);
  CHECK(t.attr.port_num == 2);
  CHECK(t.attr.pkey_index == 0);
  CHECK(t.attr.qp_access_flags ==
        (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
  CHECK(t.mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
}

TEST_CASE("rdma RTR on InfiniBand addresses the peer by LID without a GRH") {
  const auto t = rtr_transition(infiniband(), peer);
  CHECK(t.attr.qp_state == IBV_QPS_RTR);
  CHECK(t.attr.path_mtu == IBV_MTU_4096);
  CHECK(t.attr.dest_qp_num == 0x00abcd);
  CHECK(t.attr.rq_psn == 0x123456);
  CHECK(t.attr.max_dest_rd_atomic == 8);
  CHECK(t.attr.min_rnr_timer == 12);
  CHECK(t.attr.ah_attr.dlid == 0x17);
  CHECK(t.attr.ah_attr.port_num == 2);
  CHECK(t.attr.ah_attr.sl == 0);
  CHECK(t.attr.ah_attr.is_global == 0);
  CHECK(t.attr.ah_attr.grh.hop_limit == 0);
  CHECK(t.mask == (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
}

TEST_CASE("rdma RTR on RoCE addresses the peer by GID through a GRH") {
  const auto t = rtr_transition(roce(), peer);
  CHECK(t.attr.path_mtu == IBV_MTU_1024);
  CHECK(t.attr.max_dest_rd_atomic == 16);
  CHECK(t.attr.ah_attr.is_global == 1);
  CHECK(t.attr.ah_attr.port_num == 1);
  CHECK(t.attr.ah_attr.grh.sgid_index == 3);
  CHECK(t.attr.ah_attr.grh.hop_limit == rdma_hop_limit);
  const std::vector<std::uint8_t> expected{0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                           0x02, 0x02, 0xc9, 0xff, 0xfe, 0x0a, 0x0b, 0x0c};
  CHECK(std::vector<std::uint8_t>(t.attr.ah_attr.grh.dgid.raw,
                                  t.attr.ah_attr.grh.dgid.raw + 16) == expected);
  CHECK((t.mask & IBV_QP_AV) != 0);
}

TEST_CASE("rdma RTS sets our PSN and the send side's timers") {
  const auto t = rts_transition(infiniband(), 0xfedcba);
  CHECK(t.attr.qp_state == IBV_QPS_RTS);
  CHECK(t.attr.sq_psn == 0xfedcba);
  CHECK(t.attr.timeout == 14);
  CHECK(t.attr.retry_cnt == 7);
  CHECK(t.attr.rnr_retry == 7);
  CHECK(t.attr.max_rd_atomic == 8);
  CHECK(t.mask == (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
}

TEST_CASE("rdma GIDs travel as two halves in network byte order") {
  const auto gid = gid_from_halves(peer.gid_high, peer.gid_low);
  CHECK(gid.raw[0] == 0xfe);
  CHECK(gid.raw[15] == 0x0c);
  std::uint64_t high = 0, low = 0;
  gid_to_halves(gid, high, low);
  CHECK(high == peer.gid_high);
  CHECK(low == peer.gid_low);
}

TEST_CASE("rdma completion statuses become named slice errors") {
  const std::vector<std::pair<ibv_wc_status, transfer_error>> expected{
    {IBV_WC_SUCCESS, transfer_error::none},
    {IBV_WC_WR_FLUSH_ERR, transfer_error::lane_closed},
    {IBV_WC_RETRY_EXC_ERR, transfer_error::peer_unreachable},
    {IBV_WC_RNR_RETRY_EXC_ERR, transfer_error::peer_unreachable},
    {IBV_WC_REM_ACCESS_ERR, transfer_error::remote_access},
    {IBV_WC_REM_INV_REQ_ERR, transfer_error::remote_access},
    {IBV_WC_LOC_PROT_ERR, transfer_error::local_access},
    {IBV_WC_LOC_ACCESS_ERR, transfer_error::local_access},
    {IBV_WC_LOC_LEN_ERR, transfer_error::length_overflow},
    {IBV_WC_REM_OP_ERR, transfer_error::lane_closed},
    {IBV_WC_LOC_QP_OP_ERR, transfer_error::lane_closed},
    {IBV_WC_BAD_RESP_ERR, transfer_error::lane_closed},
    {IBV_WC_FATAL_ERR, transfer_error::lane_closed},
    {IBV_WC_GENERAL_ERR, transfer_error::lane_closed},
  };
  for (const auto& [status, error] : expected) {
    CAPTURE(ibv_wc_status_str(status));
    CHECK(completion_status(status) == transfer_status{error, 0});
  }
}

TEST_CASE("rdma slices that failed for the QP pass on another and access errors are final") {
  CHECK(retryable(completion_status(IBV_WC_WR_FLUSH_ERR).error));
  CHECK(retryable(completion_status(IBV_WC_RETRY_EXC_ERR).error));
  CHECK(retryable(completion_status(IBV_WC_FATAL_ERR).error));
  CHECK_FALSE(retryable(completion_status(IBV_WC_REM_ACCESS_ERR).error));
  CHECK_FALSE(retryable(completion_status(IBV_WC_LOC_PROT_ERR).error));
  CHECK(to_string(completion_status(IBV_WC_REM_ACCESS_ERR)) == "remote_access");
  CHECK(to_string(completion_status(IBV_WC_LOC_ACCESS_ERR)) == "local_access");
}

TEST_CASE("rdma requests flushed after we stopped the QP fail for the reason we did") {
  const transfer_status timed_out{transfer_error::timeout, 0};
  const auto unarmed = notify_failure_status(EIO);
  CHECK(completion_status(IBV_WC_WR_FLUSH_ERR, timed_out) == timed_out);
  CHECK(completion_status(IBV_WC_WR_FLUSH_ERR, unarmed) == unarmed);
  // What completed before the flush, or failed for a reason of its own, keeps its meaning.
  CHECK(completion_status(IBV_WC_SUCCESS, unarmed).ok());
  CHECK(completion_status(IBV_WC_REM_ACCESS_ERR, unarmed) ==
        transfer_status{transfer_error::remote_access, 0});
  CHECK(completion_status(IBV_WC_RETRY_EXC_ERR, timed_out) ==
        transfer_status{transfer_error::peer_unreachable, 0});
}

TEST_CASE("rdma CQ that cannot be armed is no timeout: its slices retry, with the errno") {
  const auto status = notify_failure_status(EIO);
  CHECK(status == transfer_status{transfer_error::lane_closed, EIO});
  CHECK(retryable(status.error));
  CHECK(to_string(status) == "lane_closed(EIO)");
}

TEST_CASE("opening rdma devices where there are none is the error that names tcp") {
  if (!list_rdma_devices().names.empty()) {
    return test::skip_test("this machine has an RDMA device");
  }
  std::string message;
  try {
    rdma_domain domain{rdma_domain_settings{}};
  } catch (const rdma_setup_error& e) {
    message = e.what();
  }
  CHECK(message.find("no RDMA device") != std::string::npos);
  CHECK(message.find("transfer.transport = \"tcp\"") != std::string::npos);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
