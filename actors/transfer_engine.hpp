// The node's transfer engine (DESIGN.md "Transfer"): this node's segments, the
// services that let peers reach them (a transfer host published for descriptors, the
// tcp server on transfer.listen) and a route per peer connected. The services start
// on first need, so a node that never transfers binds nothing. Thread-safe: the
// node's callers share one engine.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/transport_routes.hpp"
#include "config/config.hpp"
#include "messages/transfer.hpp"
#include "runtime/control_channel.hpp"
#include "runtime/net/lane_admission.hpp"
#include "runtime/transfer_peer.hpp"

namespace spillway {

class rdma_domain;
class tcp_server;

class transfer_engine {
public:
  // Starts nothing. Routes are "local", "tcp" or "rdma", as transfer.transport says.
  // `faults` reach the tcp server.
  transfer_engine(caf::actor_system& system, transfer_section transfer, fault_section faults);
  ~transfer_engine();
  transfer_engine(const transfer_engine&) = delete;
  transfer_engine& operator=(const transfer_engine&) = delete;

  // Registers [base, base + length) for the peers it is exported to (for rdma, as a
  // memory region on every device, whose rkey the descriptor carries). Throws
  // std::runtime_error when the services cannot start (transfer.listen or
  // transfer.control_port taken, or the rdma devices do not open) or the memory cannot
  // be registered.
  segment_descriptor register_segment(void* base, std::uint64_t length,
                                      segment_export exported);
  // Withdraws a segment: later requests on it fail as not_exported; returns once no
  // lane moves its bytes. False for an id not registered.
  bool unregister_segment(std::uint64_t id);

  // This node's transfer identity: what peers export their segments to.
  std::string identity() const;

  // The port of this node's published transfer host, on transfer.listen's host:
  // transfer.control_port, or the free one chosen when that is 0.
  std::uint16_t control_port();

  // Exchanges descriptors with the peer whose transfer host is at host:control_port
  // and opens a route to it; for a peer connected before, refreshes that route's
  // descriptors and returns it again. Throws std::runtime_error.
  transfer_peer connect(const std::string& host, std::uint16_t control_port);

  // One status per request, in order; `unavailable` for all once the engine stopped
  // or the route's slicer is gone. The caller's memory must outlive the future.
  std::future<std::vector<transfer_status>> submit(const transfer_peer& peer,
                                                   std::vector<transfer_request> requests);

  // The slicer the next batch to `peer` goes to, for an actor that asks it itself
  // (request/then) instead of waiting on submit's future; null once stopped.
  slicer_actor slicer_for(const transfer_peer& peer);

  // What the routes' slicers answer to `stats`, summed, and the tcp server's refusals.
  // Zero before the first transfer; throws std::runtime_error when a slicer does not
  // answer.
  transfer_stats stats();

  // Stops routes, host and server. Idempotent; the actor system outlives it.
  void stop();

private:
  void start_services();  // caller holds mutex_
  // The route whose transfer host is `host`, now known by `name` too; caller holds mutex_.
  std::optional<std::uint32_t> route_to(const transfer_host_actor& host, const std::string& name);
  transfer_peer refresh(std::uint32_t index);  // caller does not hold mutex_
  transfer_route open_route(const std::string& host, std::uint16_t control_port,
                            std::shared_ptr<const rdma_domain> domain);

  caf::actor_system& system_;
  transfer_section transfer_;
  fault_section faults_;
  std::mutex mutex_;
  std::shared_ptr<segment_table> segments_;
  std::shared_ptr<lane_admission> admission_ = std::make_shared<lane_admission>();
  std::unique_ptr<tcp_server> server_;
  std::shared_ptr<rdma_domain> domain_;  // rdma: the devices, and the segments' MRs
  rdma_host_actor rdma_host_;
  transfer_host_actor host_;
  control_listener listener_;  // host_'s guard, published on control_port_
  std::uint16_t control_port_ = 0;
  std::vector<transfer_route> routes_;
  std::map<std::string, std::uint32_t> route_of_peer_;  // "host:port" -> index in routes_
  bool stopped_ = false;
};

}  // namespace spillway
