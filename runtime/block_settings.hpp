// Node wiring: the settings a building block takes, filled from the node's config.
// Blocks (runtime/<sub>/) never read the config themselves; the node, its actors and
// the doctor hand each one what it needs through these.
#pragma once

#include "config/config.hpp"
#include "runtime/net/tcp_server.hpp"
#include "runtime/rdma/rdma_domain.hpp"

namespace spillway {

inline rdma_domain_settings rdma_settings(const transfer_section& transfer) {
  return {transfer.rdma_devices,
          static_cast<std::uint8_t>(transfer.rdma_port),  // validated: 1 to 255
          transfer.rdma_gid_index};
}

// The tcp_* dice count only when the [fault] section is enabled.
inline tcp_server_faults tcp_faults(const fault_section& faults) {
  if (!faults.enabled) return {};
  return {faults.tcp_drop_lane_after_slices, faults.tcp_kill_after_slices};
}

// The tcp server's caps and timeouts ([transfer] max_lanes, max_lanes_per_peer,
// lane_idle_timeout_ms, frame_timeout_ms).
inline tcp_server_limits tcp_limits(const transfer_section& transfer) {
  return {transfer.max_lanes, transfer.max_lanes_per_peer,
          {std::chrono::milliseconds{transfer.lane_idle_timeout_ms},
           std::chrono::milliseconds{transfer.frame_timeout_ms}}};
}

}  // namespace spillway
