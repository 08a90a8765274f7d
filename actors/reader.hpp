// A reader: a detached actor with its own thread and its own io_uring. Mail arrival
// bumps an eventfd that the ring keeps a read posted on, so one
// io_uring_submit_and_wait sleeps until either I/O completes or a message arrives
// (STACK.md 2.8). Where io_uring is unusable, or read.engine = "posix", the same
// actor serves the same messages from a plain blocking mailbox loop.
#pragma once

#include <cstdint>

#include <caf/fwd.hpp>

#include "config/config.hpp"

namespace spillway {

caf::actor spawn_reader(caf::actor_system& system, std::uint32_t index,
                        const read_section& config);

}  // namespace spillway
