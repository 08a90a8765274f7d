// A node's remote interface (messages/service.hpp) asked from an actor system of
// "another process" (remote_system.hpp), as the service's tests ask it: for a reply that
// must come, or for the refusal a request must end in.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>

#include <caf/scoped_actor.hpp>

#include "messages/service.hpp"
#include "tests/remote_system.hpp"

namespace spillway::test {

struct remote_service : remote_system<remote_node_actor> {
  using remote_system::remote_system;

  // The reply, or the rendered error as the failure of the test.
  template <class Reply, class... Ts>
  Reply ask(Ts&&... xs) {
    caf::scoped_actor self{*system};
    Reply reply{};
    self->request(remote, std::chrono::seconds(30), std::forward<Ts>(xs)...)
      .receive([&](Reply& r) { reply = std::move(r); },
               [&](caf::error& err) { FAIL("remote: " << system->render(err)); });
    return reply;
  }

  // The rendered error the request must end in.
  template <class... Ts>
  std::string refusal(Ts&&... xs) {
    caf::scoped_actor self{*system};
    std::string what;
    self->request(caf::actor_cast<caf::actor>(remote), std::chrono::seconds(30),
                  std::forward<Ts>(xs)...)
      .receive([&](caf::message&) { FAIL("the request was served"); },
               [&](caf::error& err) { what = system->render(err); });
    return what;
  }
};

}  // namespace spillway::test
