#include "actors/transport_host.hpp"

#include <map>
#include <mutex>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/exit_guard.hpp"
#include "runtime/storage/crc32c.hpp"

namespace spillway {
namespace {

// This process's transfer hosts, by (node, actor id): how a local route reaches a
// peer's segment table without taking an address from the peer.
struct local_hosts {
  std::mutex mutex;
  std::map<std::pair<std::string, caf::actor_id>, std::weak_ptr<const segment_table>> tables;
};

local_hosts& hosts() {
  static local_hosts instance;
  return instance;
}

caf::error refused(const std::string& what) {
  return caf::make_error(caf::sec::invalid_argument, what);
}

transfer_host_actor::behavior_type transport_host(transfer_host_actor::pointer self,
                                                  transport_host_settings settings) {
  auto st = std::make_shared<transport_host_settings>(std::move(settings));
  return {
    [self, st](describe_atom) -> caf::result<transfer_peer_info> {
      const auto peer = transfer_identity_of(self->current_sender());
      if (peer.empty()) return refused("describe: an anonymous sender has no identity");
      auto ticket = st->admission->issue(peer);
      return transfer_peer_info{st->segments->list_for(peer, true, false), st->data_port,
                                ticket.route, std::move(ticket.secret)};
    },
    [self, st](checksum_atom, std::uint64_t segment, std::uint64_t offset,
               std::uint64_t length, std::uint32_t crc) -> caf::result<std::uint32_t> {
      if (length > checksum_length_max)
        return refused("checksum: at most " + std::to_string(checksum_length_max) +
                       " bytes a request");
      const auto peer = transfer_identity_of(self->current_sender());
      std::byte* where = nullptr;
      segment_use use;
      const auto error = st->segments->resolve(segment, offset, length, peer,
                                               st->admission->admitted(peer), transfer_op::read,
                                               where, use);
      if (error != transfer_error::none) {
        spdlog::warn("transfer host: refused a checksum of segment {} for peer {}: {}", segment,
                     peer, name_of(error));
        return refused("checksum: " + to_string(transfer_status{error, 0}));
      }
      return crc32c_extend(crc, where, length);
    },
    [self, st](caf::connect_atom, rdma_qp_info& theirs) -> caf::result<rdma_qp_info> {
      if (!st->rdma)
        return refused("rdma connect: this node's transfer.transport is not \"rdma\"");
      const auto peer = transfer_identity_of(self->current_sender());
      if (peer.empty() || !st->admission->admitted(peer)) {
        spdlog::warn("transfer host: refused an rdma connect from {}: it never described",
                     peer.empty() ? "an anonymous sender" : peer);
        return refused("rdma connect: describe first");
      }
      return self->delegate(st->rdma, caf::connect_atom_v, std::move(theirs));
    },
  };
}

}  // namespace

std::string transfer_identity(const caf::actor_system& system) { return to_string(system.node()); }

std::string transfer_identity_of(const caf::strong_actor_ptr& sender) {
  return sender ? to_string(sender->node()) : std::string{};
}

std::string transfer_identity_of(const transfer_host_actor& host) {
  return host ? to_string(host.node()) : std::string{};
}

transfer_host_actor spawn_transport_host(caf::actor_system& system,
                                         transport_host_settings settings) {
  auto segments = settings.segments;
  auto host = spawn_exit_proof(
    system,
    [settings = std::move(settings)](transfer_host_actor::pointer self) {
      return transport_host(self, settings);
    },
    "the transfer host");
  std::lock_guard lock{hosts().mutex};
  auto& tables = hosts().tables;
  for (auto it = tables.begin(); it != tables.end();)  // forget the stopped ones
    it = it->second.expired() ? tables.erase(it) : std::next(it);
  tables[{to_string(host.node()), host.id()}] = segments;
  return host;
}

std::shared_ptr<const segment_table> local_segments_of(const transfer_host_actor& host) {
  if (!host) return nullptr;
  std::lock_guard lock{hosts().mutex};
  const auto it = hosts().tables.find({to_string(host.node()), host.id()});
  return it == hosts().tables.end() ? nullptr : it->second.lock();
}

}  // namespace spillway
