// A deterministic actor system for tests (STACK.md section 3): CAF's test_coordinator
// runs an actor only when the test says so, and time passes only when the test moves
// it. Detached and blocking actors bypass it, so tests put event-based fakes behind
// the same typed interfaces instead.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

namespace spillway::test {

struct det_fixture {
  caf::actor_system_config config;
  caf::actor_system system;
  caf::scoped_actor self;
  caf::scheduler::test_coordinator& sched;

  det_fixture()
      : system(prepare(config)),
        self(system, true),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())) {}

  ~det_fixture() { sched.run(); }

private:
  static caf::actor_system_config& prepare(caf::actor_system_config& config) {
    config.set("scheduler.policy", caf::atom("testing"));
    return config;
  }
};

}  // namespace spillway::test
