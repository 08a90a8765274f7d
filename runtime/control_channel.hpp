// The control channel: CAF's middleman, over which clients reach node.listen and nodes
// reach each other's transfer hosts. Every listener and every connection of it goes
// through here, so that each speaks TLS when the actor system was configured with it
// (runtime/tls.hpp: [security]) and plain BASP otherwise, and every published actor
// sits behind an exit guard (actors/exit_guard.hpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_control_block.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "messages/service.hpp"
#include "messages/transfer.hpp"

namespace spillway {

// Whether `system` speaks TLS on the control channel.
bool control_channel_tls(caf::actor_system& system);

// A guard published on host:port; the owner stops it. Copies share the one listener.
class control_listener {
public:
  control_listener() = default;
  control_listener(caf::actor_system& system, caf::actor guard, std::uint16_t port)
    : system_(&system), guard_(std::move(guard)), port_(port) {}

  std::uint16_t port() const { return port_; }
  explicit operator bool() const { return static_cast<bool>(guard_); }

  // Closes the port to new connections; peers connected keep their guard.
  void unpublish();
  // Closes the port and stops the guard: its peers see it go. Idempotent.
  void stop();

private:
  caf::actor_system* system_ = nullptr;
  caf::actor guard_;
  std::uint16_t port_ = 0;
};

// Publishes `inner` behind its exit guard on host:port (0: a free one; `reuse`: bind
// with SO_REUSEADDR). Throws std::runtime_error with CAF's reason.
control_listener publish_node_service(caf::actor_system& system, const service_actor& inner,
                                      const std::string& host, std::uint16_t port,
                                      bool reuse);
// The same for a transfer host, published as itself: it is exit-proof on its own
// (actors/exit_guard.hpp says why it has no guard). The listener's stop stops it.
control_listener publish_transfer_host(caf::actor_system& system,
                                       const transfer_host_actor& transfer_host,
                                       const std::string& host, std::uint16_t port);

// The actor published at host:port and the messaging interface it was published with,
// or CAF's error (a TLS refusal reads as a connection closed during the handshake; the
// log has the reason). Connects again when CAF drops the connection before its
// handshake (control_channel.cpp says why it does).
struct published_actor {
  caf::strong_actor_ptr actor;
  std::set<std::string> interface;
};
caf::expected<published_actor> connect_published(caf::actor_system& system,
                                                 const std::string& host, std::uint16_t port);

// The transfer host published at host:port (connect_published), or CAF's error.
caf::expected<transfer_host_actor> connect_transfer_host(caf::actor_system& system,
                                                         const std::string& host,
                                                         std::uint16_t port);

// The middleman actor that makes connections (connect_atom, host, port), for an actor
// that connects without blocking (actors/node_link.cpp).
caf::actor control_middleman(caf::actor_system& system);

}  // namespace spillway
