// The owner's side of the control channel: tells peers its segments and data port
// (descriptor exchange by message), checksums ranges so that tests and the bench can
// verify bytes that went to another process, and hands rdma handshakes to `rdma`
// (null unless transfer.transport is "rdma": then a handshake is a named error).
#pragma once

#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "messages/transfer.hpp"
#include "runtime/net/segment.hpp"

namespace spillway {

// Random, drawn once per process: equal tokens mean one address space.
std::uint64_t transfer_process_token();

transfer_host_actor spawn_transport_host(caf::actor_system& system,
                                         std::shared_ptr<const segment_table> segments,
                                         std::uint16_t data_port,
                                         rdma_host_actor rdma = rdma_host_actor{});

}  // namespace spillway
