// The registrar: it registers the arena's chunks and the caller memory the node was
// given with io_uring, one reader at a time (serial pinning was much faster than
// concurrent, in the RFC). Where the kernel can clone a registered buffer table
// (6.12+), each buffer is registered once, on the registrar's own ring, and every reader
// clones the table in its turn; elsewhere each reader registers the buffers on its own
// ring, in the turns this actor grants.
#pragma once

#include <chrono>
#include <cstdint>

#include <caf/fwd.hpp>

#include "messages/read.hpp"

namespace spillway {

// A turn is quick (clone: microseconds; register 1 GiB: tens of ms); `turn_timeout`
// bounds a reader that hangs in one, so that the others still get theirs.
registrar_actor spawn_registrar(caf::actor_system& system, std::uint32_t slots,
                                std::chrono::milliseconds turn_timeout = std::chrono::seconds(30));

}  // namespace spillway
