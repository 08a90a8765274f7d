#include "actors/transport_host.hpp"

#include <random>

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "runtime/storage/crc32c.hpp"

namespace spillway {
namespace {

transfer_host_actor::behavior_type transport_host(transfer_host_actor::pointer self,
                                                  std::shared_ptr<const segment_table> segments,
                                                  std::uint16_t data_port, rdma_host_actor rdma) {
  return {
    [segments, data_port](describe_atom) {
      return transfer_peer_info{segments->list(), data_port, transfer_process_token()};
    },
    [segments](checksum_atom, std::uint64_t segment, std::uint64_t offset, std::uint64_t length,
               std::uint32_t crc) -> caf::result<std::uint32_t> {
      if (length > checksum_length_max)
        return caf::make_error(caf::sec::invalid_argument,
                               "checksum: at most " + std::to_string(checksum_length_max) +
                                 " bytes a request");
      std::byte* where = nullptr;
      const auto error = segments->resolve(segment, offset, length, where);
      if (error != transfer_error::none)
        return caf::make_error(caf::sec::invalid_argument, to_string(transfer_status{error, 0}));
      return crc32c_extend(crc, where, length);
    },
    [self, rdma](caf::connect_atom, rdma_qp_info& theirs) -> caf::result<rdma_qp_info> {
      if (!rdma)
        return caf::make_error(caf::sec::invalid_argument,
                               "rdma connect: this node's transfer.transport is not \"rdma\"");
      return self->delegate(rdma, caf::connect_atom_v, std::move(theirs));
    },
  };
}

}  // namespace

std::uint64_t transfer_process_token() {
  static const std::uint64_t token = [] {
    std::random_device random;
    return (std::uint64_t{random()} << 32) | random();
  }();
  return token;
}

transfer_host_actor spawn_transport_host(caf::actor_system& system,
                                         std::shared_ptr<const segment_table> segments,
                                         std::uint16_t data_port, rdma_host_actor rdma) {
  return system.spawn(transport_host, std::move(segments), data_port, std::move(rdma));
}

}  // namespace spillway
