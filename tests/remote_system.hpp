// An actor system of "another process", in this one: it reaches the actor a node
// published on 127.0.0.1:port over the network, through CAF's middleman.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "runtime/actor_system_setup.hpp"
#include "runtime/control_channel.hpp"

namespace spillway::test {

template <class Handle>
struct remote_system {
  caf::actor_system_config config;
  std::optional<caf::actor_system> system;
  Handle remote;

  explicit remote_system(std::uint16_t port) {
    configure_actor_system(config);
    system.emplace(config);
    auto found = connect_published(*system, "127.0.0.1", port);
    REQUIRE_MESSAGE(found, (found ? "" : system->render(found.error())));
    REQUIRE(found->actor);
    REQUIRE(system->assignable<Handle>(found->interface));
    remote = caf::actor_cast<Handle>(std::move(found->actor));
  }
};

}  // namespace spillway::test
