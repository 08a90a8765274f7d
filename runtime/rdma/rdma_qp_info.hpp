// One side of an RDMA RC queue pair, as the other side needs it to connect (RTR). The
// exchange goes over the control channel, a CAF message (messages/transfer.hpp),
// before any work request; this header stays free of CAF so that the verbs code in
// runtime/rdma/ builds the queue pair transitions from it.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/net/segment.hpp"

namespace spillway {

// `gid` (RoCE's address, high and low 64 bits of its 16 bytes in network order) and
// `lid` (InfiniBand's) name the port; `segments` carry the rkeys of the side's memory
// regions on the device this queue pair lives on (the owner's answer fills them in).
struct rdma_qp_info {
  std::uint32_t qp_num = 0;
  std::uint32_t psn = 0;  // first packet sequence number: 24 bits
  std::uint16_t lid = 0;
  std::uint8_t port = 1;
  std::uint64_t gid_high = 0;
  std::uint64_t gid_low = 0;
  std::vector<segment_descriptor> segments;

  bool operator==(const rdma_qp_info&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rdma_qp_info& x) {
  return f(x.qp_num, x.psn, x.lid, x.port, x.gid_high, x.gid_low, x.segments);
}

}  // namespace spillway
