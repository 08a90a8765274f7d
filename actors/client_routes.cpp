#include "actors/client_routes.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <caf/local_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/transfer_engine.hpp"

namespace spillway {
namespace {

struct routes_state {
  std::shared_ptr<transfer_engine> engine;
  std::map<std::string, transfer_peer> known;  // "host:port" -> its route, as last described
  static inline const char* name = "client_routes";
};

using routes_pointer = client_routes_actor::stateful_pointer<routes_state>;

bool knows_all(const transfer_peer& peer, const std::vector<std::uint64_t>& segments) {
  return std::all_of(segments.begin(), segments.end(), [&](std::uint64_t id) {
    return find_segment(peer.segments, id) != nullptr;
  });
}

caf::result<std::uint32_t, std::vector<segment_descriptor>> route_to(
  routes_pointer self, const std::string& host, std::uint16_t port,
  const std::vector<std::uint64_t>& segments) {
  auto& st = self->state;
  const auto name = host + ":" + std::to_string(port);
  if (auto it = st.known.find(name); it != st.known.end() && knows_all(it->second, segments))
    return {it->second.route, it->second.segments};
  try {
    // A segment still unknown after this fails its requests as unknown_segment.
    auto peer = st.engine->connect(host, port);
    auto& known = st.known[name] = std::move(peer);
    return {known.route, known.segments};
  } catch (const std::exception& e) {
    spdlog::warn("cannot reach the client's transfer host {}: {}", name, e.what());
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "client transfer host " + name + ": " + e.what());
  }
}

client_routes_actor::behavior_type client_routes(routes_pointer self,
                                                 std::shared_ptr<transfer_engine> engine) {
  self->state.engine = std::move(engine);
  return {
    [self](caf::connect_atom, const std::string& host, std::uint16_t port,
           const std::vector<std::uint64_t>& segments) {
      return route_to(self, host, port, segments);
    },
  };
}

}  // namespace

client_routes_actor spawn_client_routes(caf::local_actor* parent,
                                        std::shared_ptr<transfer_engine> engine) {
  return parent->spawn<caf::linked + caf::detached>(client_routes, std::move(engine));
}

}  // namespace spillway
