// The `rdma` transport: one actor per RC queue pair, as tcp has one per lane.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "messages/transfer.hpp"

namespace spillway {

class rdma_domain;

struct rdma_lane_options {
  std::shared_ptr<const rdma_domain> domain;
  std::size_t device = 0;  // which of the domain's devices the QP lives on
  rdma_host_actor owner;   // the peer's side of the handshake (its transfer host)
  std::chrono::milliseconds slice_timeout{};  // transfer.slice_timeout_ms
  std::uint32_t depth = 1;  // work requests in flight, capped by the device
};

// Detached: a QP's actor blocks on its completion channel while a group moves, so it
// gets its own thread (STACK.md 2.8). It connects its QP on the first group and again
// after the QP broke, exchanging QP info with `owner` by message.
transport_actor spawn_rdma_transport(caf::actor_system& system, rdma_lane_options options);

}  // namespace spillway
