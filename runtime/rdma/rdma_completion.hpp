// What a work completion's status means for its slice: a named transfer_error that
// says whether the slice may pass on another queue pair (retryable()) or is final.
#pragma once

#include <infiniband/verbs.h>

#include "runtime/net/slice.hpp"

namespace spillway {

// `stopped_for`: why we moved the QP to the error state ourselves, none when we did
// not. The requests the HCA then flushes failed for that reason, not for the QP's.
transfer_status completion_status(ibv_wc_status status, const transfer_status& stopped_for = {});

// Why the slices still out fail when ibv_req_notify_cq answered `error`.
transfer_status notify_failure_status(int error);

}  // namespace spillway
