// The reader's protocol. A reader owns one io_uring; for now it answers `stats`, and
// the read path adds its read messages here.
#pragma once

#include <caf/typed_actor.hpp>
#include <caf/replies_to.hpp>

#include "messages/stats.hpp"
#include "messages/type_ids.hpp"

namespace spillway {

using reader_actor = caf::typed_actor<caf::replies_to<stats_atom>::with<reader_stats>>;

}  // namespace spillway
