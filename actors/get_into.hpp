// One remote get_into request (messages/service.hpp): asks the catalog for the values'
// sizes and the client routes for the route to the client's transfer host, both at
// once; refuses what cannot fit its placement unread (too_large); cuts the rest into
// pieces of about piece_bytes_max, all sent at once, so that the lanes send one piece
// while the disk reads the next; answers with every piece's statuses in request order,
// or at its deadline with the keys not in yet as timeout.
#pragma once

#include <chrono>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/client_routes.hpp"
#include "messages/node.hpp"
#include "messages/read.hpp"
#include "messages/service.hpp"
#include "messages/store.hpp"

namespace spillway {

class transfer_engine;

using get_into_actor =
  caf::typed_actor<caf::replies_to<get_into_atom, get_into_request>::with<get_into_reply>,
                   caf::reacts_to<caf::timeout_atom>>;

struct get_into_context {  // durations first, as service_context
  std::chrono::milliseconds ask_timeout;
  std::chrono::milliseconds read_deadline;
  std::shared_ptr<transfer_engine> engine;
  node_actor supervisor;
  catalog_actor catalog;
  arena_actor arena;
  client_routes_actor routes;
};

// A piece is read as one batch and sent as that batch's waves, so the first sends wait
// for one piece's reads and the last trail the last read by one piece's sends: 8 MiB is
// 4 values of 1.8 MiB, a few ms of the disk. 32 MiB pieces measured 4-5 % slower
// (bench e2e at 1.8 MiB, one node: 1.35 and 1.33 GB/s against 1.41 and 1.40).
constexpr std::uint64_t piece_bytes_max = 8ull << 20;

// Spawned linked to `parent`, as a value fetch is; its pieces are not (value_push.hpp).
get_into_actor spawn_get_into(caf::local_actor* parent, get_into_context context);

}  // namespace spillway
