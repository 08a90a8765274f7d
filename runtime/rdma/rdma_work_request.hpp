// How a slice becomes an RDMA work request: one RDMA WRITE or READ, one SGE, signaled
// so that its completion settles the slice. Pure: the verbs transport posts what this
// builds, and the tests check it field by field on machines without a device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

#include "runtime/net/segment.hpp"
#include "runtime/net/slice.hpp"
#include "runtime/net/slice_pool.hpp"

namespace spillway {

// `lkey`: the local memory region holding s.local; `remote`: the peer's descriptor of
// s.segment (base and rkey). `wr` and `sge` are overwritten; wr.sg_list points at `sge`.
void build_work_request(const slice& s, std::uint32_t lkey, const segment_descriptor& remote,
                        std::uint64_t wr_id, ibv_send_wr& wr, ibv_sge& sge);

// Whether every slice of `group` names a segment among `remote`, the peer's descriptors
// as its handshake answer gave them: one it registered since has no rkey there.
bool knows_every_segment(const std::vector<segment_descriptor>& remote, const slice_group& group);

}  // namespace spillway
