// Both middleman actors, CAF's plain one and its OpenSSL module's, answer the same
// protocol (caf/io/middleman_actor.hpp) and share one BASP broker: publishing and
// connecting differ only in which of them is asked, unpublishing not at all.
#include "runtime/control_channel.hpp"

#include <set>
#include <stdexcept>
#include <utility>

#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/function_view.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/scoped_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/exit_guard.hpp"

namespace spillway {
namespace {

// CAF registers two actors of its own by name, which any peer may address over BASP:
// ConfigServ stores whatever it is sent, SpawnServ spawns actors by name. Nothing of
// ours asks them, so they leave the registry before this process talks to any peer.
void unregister_system_actors(caf::actor_system& system) {
  system.registry().erase(caf::atom("ConfigServ"));
  system.registry().erase(caf::atom("SpawnServ"));
}

caf::io::middleman_actor middleman_of(caf::actor_system& system) {
  unregister_system_actors(system);
  if (system.has_openssl_manager()) return system.openssl_manager().actor_handle();
  return system.middleman().actor_handle();
}

// Publishes `guard` with the messaging interface `Interface`; stops it if that fails.
template <class Interface>
control_listener publish_guard(caf::actor_system& system, const Interface& guard,
                               const std::string& host, std::uint16_t port, bool reuse) {
  auto publish = caf::make_function_view(middleman_of(system));
  auto bound = publish(caf::publish_atom_v, port, caf::actor_cast<caf::strong_actor_ptr>(guard),
                       system.message_types<Interface>(), host, reuse);
  const auto handle = caf::actor_cast<caf::actor>(guard);
  if (!bound) {
    stop_exit_guard(handle);
    throw std::runtime_error(system.render(bound.error()));
  }
  return {system, handle, *bound};
}

}  // namespace

bool control_channel_tls(caf::actor_system& system) { return system.has_openssl_manager(); }

void control_listener::unpublish() {
  if (guard_) system_->middleman().unpublish(guard_, port_);
}

void control_listener::stop() {
  if (!guard_) return;
  unpublish();
  stop_exit_guard(guard_);
  guard_ = nullptr;
}

control_listener publish_node_service(caf::actor_system& system, const service_actor& inner,
                                      const std::string& host, std::uint16_t port,
                                      bool reuse) {
  return publish_guard(system, spawn_exit_guard(system, inner, "the node service"), host,
                       port, reuse);
}

control_listener publish_transfer_host(caf::actor_system& system,
                                       const transfer_host_actor& transfer_host,
                                       const std::string& host, std::uint16_t port) {
  return publish_guard(system, transfer_host, host, port, false);  // exit-proof itself
}

// CAF 0.17.6 starts an outgoing connection's "last seen" at the clock's epoch and sets it
// only when the peer's handshake arrives (basp_broker's connect_atom handler), so a
// heartbeat tick that falls between the two finds it 30 s silent and drops it as
// connection_timeout: about handshake time / heartbeat interval of connects, many under
// TSan or a loaded peer. Such a connect is made again; a real timeout takes 30 s, and a
// connect that fails so fast is this one. (node_link retries every failed connect.)
constexpr int connect_attempts = 5;

caf::expected<published_actor> connect_published(caf::actor_system& system,
                                                 const std::string& host, std::uint16_t port) {
  auto connect = caf::make_function_view(middleman_of(system));
  auto found = connect(caf::connect_atom_v, host, port);
  for (int attempt = 1; !found && found.error() == caf::sec::connection_timeout &&
                        attempt < connect_attempts; ++attempt) {
    spdlog::info("{}:{}: CAF dropped the connection before its handshake "
                 "(connection_timeout), connecting again", host, port);
    found = connect(caf::connect_atom_v, host, port);
  }
  if (!found) return std::move(found.error());
  auto& [node, ptr, interface] = *found;
  return published_actor{std::move(ptr), std::move(interface)};
}

caf::expected<transfer_host_actor> connect_transfer_host(caf::actor_system& system,
                                                         const std::string& host,
                                                         std::uint16_t port) {
  auto found = connect_published(system, host, port);
  if (!found) return std::move(found.error());
  if (!found->actor) return caf::make_error(caf::sec::no_actor_published_at_port);
  if (!system.assignable<transfer_host_actor>(found->interface))
    return caf::make_error(caf::sec::unexpected_actor_messaging_interface);
  return caf::actor_cast<transfer_host_actor>(std::move(found->actor));
}

caf::actor control_middleman(caf::actor_system& system) {
  return caf::actor_cast<caf::actor>(middleman_of(system));
}

}  // namespace spillway
