// On CAF's scheduler: a handshake costs a few verbs calls, once per QP, not per slice.
#include "actors/rdma_host.hpp"

#include <map>
#include <memory>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/transport_host.hpp"
#include "runtime/rdma/rdma_queue_pair.hpp"
#include "runtime/rdma/rdma_selection.hpp"

namespace spillway {
namespace {

struct rdma_host_state {
  std::shared_ptr<const rdma_domain> domain;
  std::shared_ptr<const segment_table> segments;
  std::map<caf::actor_addr, std::unique_ptr<rdma_queue_pair>> qps;  // by requester
  std::size_t next_device = 0;
  static inline const char* name = "rdma_host";
};

using rdma_host_pointer = rdma_host_actor::stateful_pointer<rdma_host_state>;

// A peer's QPs cost device memory each: past this many from one node, connects fail.
// The requester is the sender CAF delivers the message from, never an id in the message.
constexpr std::size_t qps_per_peer_max = 256;

std::size_t qps_of(const rdma_host_state& st, const caf::node_id& node) {
  std::size_t n = 0;
  for (const auto& [requester, qp] : st.qps) n += requester.node() == node ? 1 : 0;
  return n;
}

caf::result<rdma_qp_info> accept(rdma_host_pointer self, rdma_qp_info& theirs) {
  auto& st = self->state;
  const auto requester = caf::actor_cast<caf::actor_addr>(self->current_sender());
  if (!requester) return caf::make_error(caf::sec::invalid_argument, "rdma connect: no sender");
  if (st.qps.count(requester) == 0 && qps_of(st, requester.node()) >= qps_per_peer_max)
    return caf::make_error(caf::sec::invalid_argument,
                           "rdma connect: at most " + std::to_string(qps_per_peer_max) +
                             " queue pairs a peer");
  const auto device = st.next_device++ % st.domain->devices();
  rdma_qp_info ours;
  std::unique_ptr<rdma_queue_pair> qp;
  try {
    qp = std::make_unique<rdma_queue_pair>(st.domain, device, 1);  // it never posts
    qp->connect(std::move(theirs));
    ours = qp->local_info();
  } catch (const rdma_setup_error& e) {
    return caf::make_error(caf::sec::runtime_error, e.what());
  }
  // Only the segments exported to this peer, with the addresses and rkeys RDMA needs.
  const auto peer = transfer_identity_of(self->current_sender());
  ours.segments = st.domain->on_device(device, st.segments->list_for(peer, true, true));
  if (st.qps.count(requester) == 0) self->monitor(self->current_sender());
  st.qps[requester] = std::move(qp);  // replaces the QP it had, which broke
  return ours;
}

rdma_host_actor::behavior_type rdma_host(rdma_host_pointer self,
                                         std::shared_ptr<const rdma_domain> domain,
                                         std::shared_ptr<const segment_table> segments) {
  self->state.domain = std::move(domain);
  self->state.segments = std::move(segments);
  self->set_down_handler([self](caf::down_msg& down) { self->state.qps.erase(down.source); });
  return {
    [self](caf::connect_atom, rdma_qp_info& theirs) { return accept(self, theirs); },
  };
}

}  // namespace

rdma_host_actor spawn_rdma_host(caf::actor_system& system,
                                std::shared_ptr<const rdma_domain> domain,
                                std::shared_ptr<const segment_table> segments) {
  return system.spawn(rdma_host, std::move(domain), std::move(segments));
}

}  // namespace spillway
