// The meter: sums what the node did (keys and bytes read and written, per-key errors by
// kind, get and put latencies) from the reports its batches and its writer send once
// each request is answered, so that no actor's state is read from outside.
#pragma once

#include <caf/fwd.hpp>

#include "messages/meter.hpp"

namespace spillway {

meter_actor spawn_meter(caf::actor_system& system);

}  // namespace spillway
