#include "runtime/rdma/rdma_completion.hpp"

namespace spillway {

transfer_status completion_status(ibv_wc_status status, const transfer_status& stopped_for) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return {};
    // The queue pair went to the error state, for an earlier request or because we put
    // it there; this one never ran, so it may pass on another QP.
    case IBV_WC_WR_FLUSH_ERR:
      return stopped_for.ok() ? transfer_status{transfer_error::lane_closed, 0} : stopped_for;
    // No ACK after retry_cnt timeouts (or no receive buffer after rnr_retry): the peer
    // or the path to it is gone.
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return {transfer_error::peer_unreachable, 0};
    // The peer's HCA refused the rkey or the range, or the request itself: sending it
    // again anywhere gets the same answer.
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
      return {transfer_error::remote_access, 0};
    // Our own lkey does not cover the SGE: the caller's memory is not registered.
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      return {transfer_error::local_access, 0};
    // Longer than the port's largest message: the slice, not the QP, is at fault.
    case IBV_WC_LOC_LEN_ERR:
      return {transfer_error::length_overflow, 0};
    // Everything else is a fault of this QP or its HCA (LOC_QP_OP, BAD_RESP, REM_OP,
    // FATAL, GENERAL, ...): the QP is in the error state and the slice may pass on
    // another one.
    default:
      return {transfer_error::lane_closed, 0};
  }
}

// The CQ cannot wake the QP's thread for the completions still out, so the QP is
// stopped and its slices pass on another one, as when it could not post them; the
// errno says why, and is what a slice that runs out of retries reports.
transfer_status notify_failure_status(int error) { return {transfer_error::lane_closed, error}; }

}  // namespace spillway
