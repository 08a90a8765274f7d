// One remote values request: finds the sizes of its values (catalog), takes the
// longest prefix of keys whose values fit in one message, reads them through a batch
// that hands them over in waves, copies each checked value into the reply and gives its
// arena lease back at once. Linked to the service, so a stopping node takes it along.
#pragma once

#include <chrono>

#include <caf/fwd.hpp>

#include "messages/read.hpp"
#include "messages/service.hpp"
#include "messages/store.hpp"

namespace spillway {

using value_fetch_actor = caf::typed_actor<
  caf::replies_to<values_atom, std::vector<std::string>>::with<values_reply>,
  caf::reacts_to<wave_atom, get_reply>,
  caf::reacts_to<get_reply>,
  caf::reacts_to<caf::timeout_atom>>;

struct fetch_context {  // durations first, as service_context
  std::chrono::milliseconds ask_timeout;
  std::chrono::milliseconds read_deadline;
  node_actor supervisor;
  catalog_actor catalog;
  arena_actor arena;
};

// Sizes by key position from the catalog's answer; a key it lacks stays 0.
std::vector<std::uint64_t> value_sizes(const resolve_reply& where, std::size_t keys);

// Why no node could read `key` (bad_key: empty, too_large: over the format's bound),
// or ok.
key_status check_key(const std::string& key);

// Spawned linked to `parent`: the fetch goes when the service does.
value_fetch_actor spawn_value_fetch(caf::local_actor* parent, fetch_context context);

}  // namespace spillway
