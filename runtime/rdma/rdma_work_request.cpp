#include "runtime/rdma/rdma_work_request.hpp"

#include <algorithm>

namespace spillway {

void build_work_request(const slice& s, std::uint32_t lkey, const segment_descriptor& remote,
                        std::uint64_t wr_id, ibv_send_wr& wr, ibv_sge& sge) {
  sge = {};
  sge.addr = reinterpret_cast<std::uint64_t>(s.local);
  sge.length = s.length;
  sge.lkey = lkey;
  wr = {};
  wr.wr_id = wr_id;
  wr.next = nullptr;  // the poster chains a group's requests
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = s.op == transfer_op::write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote.base + s.offset;
  wr.wr.rdma.rkey = remote.rkey;
}

bool knows_every_segment(const std::vector<segment_descriptor>& remote, const slice_group& group) {
  return std::all_of(group.items.begin(), group.items.end(),
                     [&](const slice* s) { return find_segment(remote, s->segment) != nullptr; });
}

}  // namespace spillway
