// A reader: a detached actor with its own thread and its own io_uring (read_ring),
// keeping up to read.window reads (and read.window_bytes) in flight across every batch
// it serves. Mail bumps an eventfd that the ring keeps a read posted on, so one wait
// covers I/O and mail.
// Where io_uring is unusable, or read.engine = "posix", the same actor answers the
// same messages with pread.
#pragma once

#include <cstdint>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/read.hpp"

namespace spillway {

// The reader joins `registrar` for the arena's buffer table, and again after a reset.
reader_actor spawn_reader(caf::actor_system& system, std::uint32_t index,
                          const read_section& config, const fault_section& faults,
                          registrar_actor registrar);

}  // namespace spillway
