// One RC queue pair on a device of an rdma_domain, with its own CQ and completion
// channel. The requester's side moves a group of slices at a time: one signaled RDMA
// WRITE or READ per slice (build_work_request), at most `depth` in flight, each
// slice's completion mapped to its status. The owner's side only answers: its QP is
// connected and never posts. After an error completion, a timeout or a CQ that could
// not be armed, the QP stays in the error state: its actor drops it and connects a
// fresh one for the next group.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/rdma/rdma_domain.hpp"
#include "runtime/rdma/rdma_qp_info.hpp"
#include "runtime/rdma/rdma_verbs.hpp"
#include "runtime/net/slice_pool.hpp"

namespace spillway {

class rdma_queue_pair {
public:
  // A QP in INIT on `domain`'s device `device`, with room for `depth` work requests
  // (capped by the device). Throws rdma_setup_error.
  rdma_queue_pair(std::shared_ptr<const rdma_domain> domain, std::size_t device,
                  std::uint32_t depth);

  // What the peer needs to connect to this QP; `segments` left empty.
  rdma_qp_info local_info() const;

  // INIT -> RTR -> RTS towards `remote`, whose segments' rkeys the work requests use.
  // Throws rdma_setup_error.
  void connect(rdma_qp_info remote);

  // Moves every slice of `group` and sets each one's status. Never throws. A slice
  // fails with `timeout` when no completion comes for `slice_timeout`, and with
  // lane_closed and the errno when the CQ cannot be armed to wait for one.
  void run(slice_group& group, std::chrono::milliseconds slice_timeout);

  bool broken() const { return broken_; }

  // Whether connect()'s peer described every segment `group` names.
  bool knows_segments_of(const slice_group& group) const;

private:
  struct exchange;  // one group's progress

  void post(exchange& x);
  std::size_t reap(exchange& x);
  bool wait(exchange& x, std::chrono::milliseconds timeout);
  void stop(exchange& x, transfer_status why);

  std::shared_ptr<const rdma_domain> domain_;  // first: it outlives the objects below
  std::size_t device_;
  std::uint32_t depth_;
  std::uint32_t psn_;
  rdma_channel channel_;
  rdma_cq cq_;
  rdma_qp qp_;
  rdma_qp_info remote_;
  bool armed_ = false;   // the CQ will signal the channel on its next completion
  bool broken_ = false;  // in the error state: no more work requests
};

}  // namespace spillway
