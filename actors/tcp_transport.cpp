// A lane actor is its connection: each group runs to the end on the lane's thread,
// then goes back to the slicer with a status per slice.
#include "actors/tcp_transport.hpp"

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "runtime/net/tcp_lane.hpp"

namespace spillway {
namespace {

transport_actor::behavior_type tcp_transport(std::shared_ptr<tcp_lane> lane) {
  return {
    [lane](post_atom, slice_group_ref& ref) {
      lane->run(*ref.group);
      return std::move(ref);
    },
  };
}

}  // namespace

transport_actor spawn_tcp_transport(caf::actor_system& system, const std::string& host,
                                    std::uint16_t port, std::chrono::milliseconds slice_timeout,
                                    lane_ticket ticket) {
  return system.spawn<caf::detached>(
    tcp_transport, std::make_shared<tcp_lane>(host, port, slice_timeout, std::move(ticket)));
}

}  // namespace spillway
