// The RDMA devices a node uses, each opened once with one protection domain, and this
// node's registered memory as a memory region on every one of them: what queue pairs
// are made on, and where their lkeys (our memory) and rkeys (told to peers) come from.
// Thread-safe: the node registers segments while queue pair actors look keys up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "runtime/rdma/rdma_qp_attr.hpp"
#include "runtime/rdma/rdma_verbs.hpp"
#include "runtime/net/segment.hpp"

namespace spillway {

// Which devices, port and GID a node sends from: transfer.rdma_devices, rdma_port and
// rdma_gid_index of its config (the names the errors below use).
struct rdma_domain_settings {
  std::vector<std::string> devices;  // empty = every device found
  std::uint8_t port = 1;             // the HCA port, on every device
  std::int64_t gid_index = -1;       // the port's GID to send from; -1 = chosen by rule
};

struct rdma_device {
  std::string name;
  rdma_context context;  // declared before pd: the PD goes first
  rdma_pd pd;
  rdma_port_settings settings;
  std::uint16_t lid = 0;
  ibv_gid gid{};
  std::uint32_t max_wr = 1;  // the most work requests a send queue and a CQ may hold
};

class rdma_domain {
public:
  // Opens the devices `settings` names (all when it names none), the port of each and
  // the GID its index picks (rdma_gid.hpp). Throws rdma_setup_error: no device (naming
  // tcp), a name not found, a port that is missing or down, no such GID, or a verbs
  // call that failed.
  explicit rdma_domain(const rdma_domain_settings& settings);
  rdma_domain(const rdma_domain&) = delete;
  rdma_domain& operator=(const rdma_domain&) = delete;

  std::size_t devices() const { return devices_.size(); }
  const rdma_device& device(std::size_t index) const { return devices_[index]; }

  // Registers [base, base + length) on every device, for local and remote READ and
  // (unless `remote_write` is false: a read-only segment, which the HCA then guards
  // too) WRITE, until deregister_memory or the domain goes. Returns its rkey on the
  // first device: the one a segment descriptor carries. Throws rdma_setup_error.
  std::uint32_t register_memory(std::byte* base, std::uint64_t length,
                                bool remote_write = true);
  // Deregisters the region registered at exactly [base, base + length) on every device:
  // its rkeys stop working, so a peer's access after this fails as remote_access.
  void deregister_memory(const std::byte* base, std::uint64_t length);

  // The lkey, on `device`, of a region holding all of [address, address + length).
  std::optional<std::uint32_t> local_key(std::size_t device, const std::byte* address,
                                         std::uint64_t length) const;

  // `segments` with the rkeys of their regions on `device`, the only ones a queue pair
  // there may use; a segment with no region is left out, so its slices fail as
  // unknown_segment instead of carrying a made-up key.
  std::vector<segment_descriptor> on_device(std::size_t device,
                                            std::vector<segment_descriptor> segments) const;

private:
  struct region {
    std::byte* base = nullptr;
    std::uint64_t length = 0;
    std::vector<rdma_mr> mrs;  // by device
  };

  std::vector<rdma_device> devices_;
  mutable std::shared_mutex mutex_;
  std::vector<region> regions_;  // after devices_: every MR goes before its PD
};

}  // namespace spillway
