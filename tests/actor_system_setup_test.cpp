// Every process sizes CAF's scheduler the same way (runtime/actor_system_setup.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

#include "runtime/actor_system_setup.hpp"

namespace spillway {

TEST_SUITE("actor-system") {

TEST_CASE("the scheduler has one worker per core unless told a number") {
  caf::actor_system_config by_cores;
  caf::actor_system cores_system{configure_actor_system(by_cores)};
  CHECK(cores_system.scheduler().num_workers() ==
        std::max(1u, std::thread::hardware_concurrency()));

  caf::actor_system_config told;
  caf::actor_system told_system{configure_actor_system(told, 3)};
  CHECK(told_system.scheduler().num_workers() == 3);
}

TEST_CASE("idle workers sleep until signalled or 1 ms instead of polling every 50 us") {
  caf::actor_system_config config;
  configure_actor_system(config);
  CHECK(caf::get_or(config, "work-stealing.moderate-poll-attempts", std::size_t{500}) == 0);
  CHECK(caf::get_or(config, "work-stealing.relaxed-sleep-duration", caf::timespan{}) ==
        std::chrono::milliseconds{1});
}

// CAF's defaults (0) send no heartbeat and keep a silent peer's connection for good; the
// BASP broker reads these two names (CAF 0.17.6, basp_broker.cpp). That a silent peer is
// dropped: tests/tls_test.cpp.
TEST_CASE("the middleman sends heartbeats each second and drops a peer silent for 30 s") {
  caf::actor_system_config config;
  configure_actor_system(config);
  CHECK(caf::get_or(config, "middleman.heartbeat-interval", caf::timespan{}) ==
        std::chrono::seconds{1});
  CHECK(caf::get_or(config, "middleman.connection-timeout", caf::timespan{}) ==
        std::chrono::seconds{30});
}

}  // TEST_SUITE

}  // namespace spillway
