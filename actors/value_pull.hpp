// One remote pull request (messages/service.hpp): a put whose values are too large to
// travel inside a message, read by the node from the client's registered memory. Checks
// every source (empty, wrapping, outside the segments the client's transfer host
// describes: bad_range, the reason naming the field) before it takes any memory, then
// takes arena extents a piece of about pull_piece_bytes at a time, two pieces at once
// (one pulled while the writer writes the other), reads each piece's values into them
// through the route's slicer (transfer_op::read), puts them from there through the
// writer as caller memory (the writer checksums every record as any put's), and gives
// the piece's lease back once the writer answered: the arena is the only memory a
// value takes, and a request never holds more than two pieces of it.
// Not linked to the request: it answers at its deadline (the keys not done: timeout)
// but stays until its last alloc, transfer and write are answered, since a lane or the
// writer may still be using an extent.
#pragma once

#include <chrono>
#include <memory>

#include <caf/fwd.hpp>

#include "messages/read.hpp"
#include "messages/service.hpp"
#include "messages/store.hpp"

namespace spillway {

class transfer_engine;

// Each piece is written and made durable (an fdatasync) before its extents come back,
// so a piece stays large (get_into's are smaller: they wait for no sync).
constexpr std::uint64_t pull_piece_bytes = 32ull << 20;

using value_pull_actor =
  caf::typed_actor<caf::replies_to<pull_atom, pull_request>::with<put_reply>,
                   caf::reacts_to<caf::timeout_atom>>;

struct pull_context {  // durations first, as service_context
  std::chrono::milliseconds ask_timeout;   // the route's answer
  std::chrono::milliseconds put_deadline;  // the whole request's
  std::shared_ptr<transfer_engine> engine;
  writer_actor writer;
  arena_actor arena;
  client_routes_actor routes;
};

value_pull_actor spawn_value_pull(caf::local_actor* parent, pull_context context);

}  // namespace spillway
