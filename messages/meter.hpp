// The meter's protocol: each batch get and each put reports what it did once it is
// answered (io_report), and stats sums them (io_stats) for node::metrics(). Local only:
// the meter is never published.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/stats.hpp"
#include "messages/type_ids.hpp"

namespace spillway {

using meter_actor = caf::typed_actor<caf::reacts_to<io_report>,
                                     caf::replies_to<stats_atom>::with<io_stats>>;

}  // namespace spillway
