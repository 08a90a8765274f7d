// A group on a connected QP runs to the end on the actor's thread. Without one, the
// actor makes a fresh QP, asks the owner for its side with `await` (later groups wait
// in the mailbox meanwhile), connects, then runs the group. A handshake that fails
// fails the group as peer_unreachable, which the slicer retries on another QP.
//
// A group naming a segment the QP has no rkey for, one the owner registered after the
// handshake, gets a fresh QP too. The owner answers every handshake with all of its
// segments as they are then, with their rkeys on the device of the QP it makes for
// us, so asking again is the handshake itself. A message of its own for the keys
// would add a request to both of the owner's interfaces (transfer host, rdma host)
// and a lookup of the QP it made for us, to save one QP setup per QP and segment
// registered later. A segment still missing from the fresh answer fails as
// unknown_segment, which is final: a group connects at most once.
#include "actors/rdma_transport.hpp"

#include <string>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "runtime/rdma/rdma_queue_pair.hpp"
#include "runtime/rdma/rdma_selection.hpp"

namespace spillway {
namespace {

struct rdma_lane_state {
  rdma_lane_options options;
  std::shared_ptr<rdma_queue_pair> qp;  // null until connected, and once it broke
  static inline const char* name = "rdma_transport";
};

using rdma_lane_pointer = transport_actor::stateful_pointer<rdma_lane_state>;

slice_group_ref unreachable(slice_group_ref ref, const std::string& why) {
  spdlog::warn("rdma: cannot connect a queue pair: {}", why);
  for (auto* s : ref.group->items) s->status = {transfer_error::peer_unreachable, 0};
  return ref;
}

caf::result<slice_group_ref> connect_and_run(rdma_lane_pointer self, slice_group_ref ref) {
  const auto& o = self->state.options;
  std::shared_ptr<rdma_queue_pair> fresh;
  try {
    fresh = std::make_shared<rdma_queue_pair>(o.domain, o.device, o.depth);
  } catch (const rdma_setup_error& e) {
    return unreachable(std::move(ref), e.what());
  }
  auto promise = self->make_response_promise<slice_group_ref>();
  self->request(o.owner, o.slice_timeout, caf::connect_atom_v, fresh->local_info())
    .await(
      [self, fresh, ref, promise](rdma_qp_info& remote) mutable {
        try {
          fresh->connect(std::move(remote));
        } catch (const rdma_setup_error& e) {
          promise.deliver(unreachable(std::move(ref), e.what()));
          return;
        }
        self->state.qp = fresh;
        fresh->run(*ref.group, self->state.options.slice_timeout);
        promise.deliver(std::move(ref));
      },
      [self, ref, promise](caf::error& err) mutable {
        promise.deliver(unreachable(std::move(ref), self->system().render(err)));
      });
  return promise;
}

transport_actor::behavior_type rdma_transport(rdma_lane_pointer self, rdma_lane_options options) {
  self->state.options = std::move(options);
  return {
    [self](post_atom, slice_group_ref& ref) -> caf::result<slice_group_ref> {
      auto& qp = self->state.qp;
      if (qp && (qp->broken() || !qp->knows_segments_of(*ref.group))) qp.reset();
      if (!qp) return connect_and_run(self, std::move(ref));
      qp->run(*ref.group, self->state.options.slice_timeout);
      return std::move(ref);
    },
  };
}

}  // namespace

transport_actor spawn_rdma_transport(caf::actor_system& system, rdma_lane_options options) {
  return system.spawn<caf::detached>(rdma_transport, std::move(options));
}

}  // namespace spillway
