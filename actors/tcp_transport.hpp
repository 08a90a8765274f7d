// The `tcp` transport: one actor per lane, each owning one connection to the peer.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include "messages/transfer.hpp"
#include "runtime/net/lane_admission.hpp"

namespace spillway {

// Detached: a lane blocks in poll() while its group moves, so it gets its own thread
// and never holds up CAF's scheduler (STACK.md 2.8). `ticket`: what the peer's transfer
// host handed this node in `describe`, sent in every connection's hello.
transport_actor spawn_tcp_transport(caf::actor_system& system, const std::string& host,
                                    std::uint16_t port, std::chrono::milliseconds slice_timeout,
                                    lane_ticket ticket);

}  // namespace spillway
