// An event-based actor: on CAF's scheduler, deterministic tests drive it like the
// slicer. A copy cannot fail; the bounds check is the only error path.
#include "actors/local_transport.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "runtime/io/stream_copy.hpp"

namespace spillway {
namespace {

void move_locally(const segment_table& segments, const std::string& peer, slice& s) {
  std::byte* remote = nullptr;
  segment_use use;
  const auto error =
    segments.resolve(s.segment, s.offset, s.length, peer, true, s.op, remote, use);
  s.status = {error, 0};
  if (error != transfer_error::none) return;
  if (s.op == transfer_op::write)
    stream_copy(remote, s.local, s.length);
  else
    stream_copy(s.local, remote, s.length);
}

transport_actor::behavior_type local_transport(std::shared_ptr<const segment_table> segments,
                                               std::string peer) {
  return {
    [segments, peer](post_atom, slice_group_ref& ref) {
      ref.group->started = transfer_clock::now();
      for (auto* s : ref.group->items) move_locally(*segments, peer, *s);
      return std::move(ref);
    },
  };
}

}  // namespace

transport_actor spawn_local_transport(caf::actor_system& system,
                                      std::shared_ptr<const segment_table> segments,
                                      bool own_thread, std::string peer) {
  if (peer.empty()) peer = segments->owner();
  if (own_thread)
    return system.spawn<caf::detached>(local_transport, std::move(segments), std::move(peer));
  return system.spawn(local_transport, std::move(segments), std::move(peer));
}

}  // namespace spillway
