// RDMA without a device: the work request a slice becomes, field by field, and whether
// the descriptors a QP's handshake brought cover a group. (No device is a startup
// error naming tcp: tests/node_test.cpp checks that message.)
#include <doctest/doctest.h>

#include <vector>

#include "runtime/rdma/rdma_work_request.hpp"

namespace spillway {
namespace {

TEST_SUITE("transfer-rdma") {

TEST_CASE("a slice becomes one signaled RDMA work request with one SGE") {
  std::byte local[64];
  const segment_descriptor remote{3, 0x7f0000001000, 1 << 20, 0xabcd};
  for (const auto op : {transfer_op::write, transfer_op::read}) {
    slice s;
    s.op = op;
    s.length = 48;
    s.local = local + 8;
    s.segment = 3;
    s.offset = 4096;
    ibv_send_wr wr;
    ibv_sge sge;
    build_work_request(s, 0x1234, remote, 77, wr, sge);
    CHECK(wr.wr_id == 77);
    CHECK(wr.next == nullptr);
    CHECK(wr.sg_list == &sge);
    CHECK(wr.num_sge == 1);
    CHECK(wr.opcode == (op == transfer_op::write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ));
    CHECK(wr.send_flags == IBV_SEND_SIGNALED);
    CHECK(wr.wr.rdma.remote_addr == 0x7f0000001000 + 4096);
    CHECK(wr.wr.rdma.rkey == 0xabcd);
    CHECK(sge.addr == reinterpret_cast<std::uint64_t>(local + 8));
    CHECK(sge.length == 48);
    CHECK(sge.lkey == 0x1234);
  }
}

TEST_CASE("a group naming a segment the handshake did not describe is found out") {
  slice_pool pool{1, 4};
  auto& group = *pool.take();
  CHECK(knows_every_segment({}, group));  // nothing named, nothing missing
  for (const std::uint64_t id : {1, 1, 3}) group.append().segment = id;
  const std::vector<segment_descriptor> at_connect{{1, 0x7f0000000000, 4096, 0x11},
                                                   {2, 0x7f0000100000, 4096, 0x12}};
  CHECK_FALSE(knows_every_segment(at_connect, group));
  auto later = at_connect;
  later.push_back({3, 0x7f0000200000, 4096, 0x13});
  CHECK(knows_every_segment(later, group));
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
