// A node as a service to other processes (README "Running a cluster"): what a remote
// client asks of the actor published on node.listen, and what the client's link to one
// node (actors/node_link.cpp) answers in its place, so both share one interface.
// put and values carry their values inside the message, so every one is bounded below;
// get_into and pull carry none: the node writes each value into the client's registered
// memory, or reads it from there, through its transfer engine (DESIGN.md "Across
// machines").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/node.hpp"
#include "messages/stats.hpp"
#include "messages/store.hpp"
#include "messages/type_ids.hpp"
#include "runtime/net/segment.hpp"
#include "runtime/storage/key_status.hpp"

namespace spillway {

// A request naming more keys is refused whole, before anything is allocated for it.
constexpr std::size_t service_keys_max = 65536;
// One value inside a message: a 1.8 MiB KV block fits, with room.
constexpr std::uint64_t inline_value_max = 4ull << 20;
// All the values of one put or one reply: what one message may carry; a middleman
// connection is one TCP stream, so a larger one would hold up every other request.
constexpr std::uint64_t inline_bytes_max = 64ull << 20;
static_assert(inline_value_max <= inline_bytes_max, "one value must fit in a message");

// values(keys): status and value per key, for keys[0, answered); the keys after them
// did not fit in inline_bytes_max and are to be asked for again. answered >= 1 for any
// non-empty request, so asking again always progresses.
struct values_reply {
  std::vector<key_status> status;
  std::vector<std::string> values;  // empty unless status[i].ok()
  std::uint32_t answered = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, values_reply& x) {
  return f(x.status, x.values, x.answered);
}

// exists(keys): a flag per key, and how many leading keys are present (what a serving
// engine asks for a prefix of KV blocks).
struct exists_reply {
  std::vector<std::uint8_t> present;
  std::uint32_t prefix = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, exists_reply& x) {
  return f(x.present, x.prefix);
}

// Where a client's transfer host listens (client::register_memory): the node connects
// there once, keeps the route, and writes values into the client's segments.
struct transfer_address {
  std::string host;
  std::uint16_t port = 0;  // the transfer host's control port
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_address& x) {
  return f(x.host, x.port);
}

// Where one value goes: `capacity` bytes at `offset` in segment `segment` of the
// client's transfer host.
struct value_placement {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint64_t capacity = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, value_placement& x) {
  return f(x.segment, x.offset, x.capacity);
}

// A host name longer than this is refused: DNS names stop at 253.
constexpr std::size_t transfer_host_max = 255;

// get_into(request): keys[i]'s value written at placements[i].
struct get_into_request {
  transfer_address client;
  std::vector<std::string> keys;
  std::vector<value_placement> placements;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_into_request& x) {
  return f(x.client, x.keys, x.placements);
}

// A status per key, and its value's size where the node knows it: ok (the value is in
// place) and too_large (the placement's capacity is below it).
struct get_into_reply {
  std::vector<key_status> status;
  std::vector<std::uint64_t> sizes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_into_reply& x) {
  return f(x.status, x.sizes);
}

// Where one value to put lies: `size` bytes at `offset` in segment `segment` of the
// client's transfer host, for the node to read (pull) from there.
struct value_source {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, value_source& x) {
  return f(x.segment, x.offset, x.size);
}

// pull(request): keys[i]'s value read by the node from sources[i] (actors/value_pull.hpp),
// for values too large to travel inside a message. Answered with a put_reply.
struct pull_request {
  transfer_address client;
  std::vector<std::string> keys;
  std::vector<value_source> sources;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pull_request& x) {
  return f(x.client, x.keys, x.sources);
}

// put(keys, values): one status per key, once sealed and synced (a value over
// inline_value_max: too_large, its reason saying to pull it instead). pull: the same,
// a source that is empty, wraps or lies outside the client's segments failing its key
// alone as bad_range, its reason naming the field. delete(keys): how many were present. report: the
// node's figures. A request over the bounds fails whole with an error that names the
// field; a remote node that is gone fails as request_receiver_down.
using remote_node_actor = caf::typed_actor<
  caf::replies_to<caf::put_atom, std::vector<std::string>, std::vector<std::string>>::with<
    put_reply>,
  caf::replies_to<values_atom, std::vector<std::string>>::with<values_reply>,
  caf::replies_to<get_into_atom, get_into_request>::with<get_into_reply>,
  caf::replies_to<pull_atom, pull_request>::with<put_reply>,
  caf::replies_to<exists_atom, std::vector<std::string>>::with<exists_reply>,
  caf::replies_to<caf::delete_atom, std::vector<std::string>>::with<std::uint64_t>,
  caf::replies_to<report_atom>::with<node_report>>;

// What node.listen publishes: the node actor's protocol (callers in this process get
// arena addresses from it), the remote one, and close: from this process only, the
// start of a graceful stop; remote requests are refused from then on, the open bucket
// is sealed, and ok comes once every remote request taken before is answered.
using service_actor = node_actor::extend_with<remote_node_actor>::extend<
  caf::replies_to<caf::close_atom>::with<caf::ok_atom>>;

// Inside the node, for get_into and pull (actors/client_routes.hpp): connect(host,
// control port, the segments a request names) -> the index of the route to that
// client's transfer host and its segments as the host described them (a pull checks
// its sources against them before it takes any memory), or an error that names the
// host and why it cannot be reached.
using client_routes_actor = caf::typed_actor<
  caf::replies_to<caf::connect_atom, std::string, std::uint16_t,
                  std::vector<std::uint64_t>>::with<std::uint32_t,
                                                    std::vector<segment_descriptor>>>;

// A client's link to one node (actors/node_link.cpp): the node's remote interface,
// answered at once with request_receiver_down while the node is not connected, plus
// connect(until_up): whether the node is connected, answered once the attempt under way
// ends, or with until_up once it is connected; tick: try again now.
using node_link_actor =
  remote_node_actor::extend<caf::replies_to<caf::connect_atom, bool>::with<bool>,
                            caf::reacts_to<caf::tick_atom>>;

}  // namespace spillway
