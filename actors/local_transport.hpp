// The `local` transport: the caller and the segment share one address space, so a
// slice is one copy (stream_copy), after the owner's checks like any other
// transport's: bounds, and that the segment is exported to `peer` (for a write,
// writable).
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "messages/transfer.hpp"
#include "runtime/net/segment.hpp"

namespace spillway {

// `own_thread`: detached, so the first group starts the moment it is posted instead of
// waiting for a scheduler worker to steal it from the slicer's (routes use this);
// deterministic tests spawn it on the scheduler. `peer`: the requester's transfer
// identity; empty for the table's owner.
transport_actor spawn_local_transport(caf::actor_system& system,
                                      std::shared_ptr<const segment_table> segments,
                                      bool own_thread = false, std::string peer = {});

}  // namespace spillway
