// The arena actor: it owns the staging memory the readers read into, populates it one
// step at a time in the background, lends it out as extents per batch, and takes it
// back on release or when a lease expires. It runs detached: faulting in memory blocks.
#pragma once

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/read.hpp"

namespace spillway {

// Throws std::runtime_error when the memory cannot be had as read.arena_pages asks.
arena_actor spawn_arena(caf::actor_system& system, const read_section& config,
                        registrar_actor registrar);

}  // namespace spillway
