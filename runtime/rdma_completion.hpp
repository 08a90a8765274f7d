// What a work completion's status means for its slice: a named transfer_error that
// says whether the slice may pass on another queue pair (retryable()) or is final.
#pragma once

#include <infiniband/verbs.h>

#include "runtime/slice.hpp"

namespace spillway {

transfer_status completion_status(ibv_wc_status status);

}  // namespace spillway
