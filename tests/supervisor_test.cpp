// The supervisor under the deterministic scheduler, with event-based fake readers.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/supervisor.hpp"
#include "messages/read.hpp"
#include "tests/det_fixture.hpp"

namespace spillway {
namespace {

// Answers stats like a reader; reads and buffer tables are not this test's business.
reader_actor::behavior_type fake_reader(reader_actor::pointer, std::uint32_t index) {
  return {
    [index](stats_atom) {
      reader_stats stats;
      stats.index = index;
      stats.engine = "fake";
      return stats;
    },
    [](read_atom, const read_client&, const std::vector<read_item>&) {},
    [](adopt_atom, const buffer_table&) { return std::int32_t{0}; },
    [index](fence_atom) { return index; },
  };
}

struct supervisor_fixture : test::det_fixture {
  std::vector<caf::actor> spawned;  // every reader the supervisor asked for, in order
  node_actor supervisor;

  explicit supervisor_fixture(std::uint64_t readers = 3) {
    node_config config;
    config.read.readers = readers;
    supervisor = spawn_supervisor(system, config, [this](caf::actor_system& sys, auto index) {
      spawned.push_back(caf::actor_cast<caf::actor>(sys.spawn(fake_reader, index)));
      return caf::actor_cast<reader_actor>(spawned.back());
    }, {});
    sched.run();
  }

  // ~actor_system waits for every actor: stop them, or the test hangs at its end.
  ~supervisor_fixture() {
    caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
    sched.run();
  }

  node_stats stats() {
    auto handle = self->request(supervisor, caf::infinite, stats_atom_v);
    sched.run();
    node_stats result;
    handle.receive([&](node_stats& s) { result = std::move(s); },
                   [&](caf::error& err) { FAIL("stats failed: " << to_string(err)); });
    return result;
  }
};

TEST_SUITE("supervisor") {

TEST_CASE_FIXTURE(supervisor_fixture, "supervisor answers stats from every reader") {
  const auto s = stats();
  REQUIRE(s.readers.size() == 3);
  for (std::uint32_t i = 0; i < 3; ++i) {
    CHECK(s.readers[i].index == i);
    CHECK(s.readers[i].engine == "fake");
  }
  CHECK(s.reader_restarts == 0);
}

TEST_CASE_FIXTURE(supervisor_fixture, "supervisor replaces a killed reader in its place") {
  REQUIRE(spawned.size() == 3);
  caf::anon_send_exit(spawned[1], caf::exit_reason::kill);
  sched.run();
  REQUIRE(spawned.size() == 4);
  CHECK(spawned[3] != spawned[1]);
  const auto s = stats();
  CHECK(s.reader_restarts == 1);
  REQUIRE(s.readers.size() == 3);
  CHECK(s.readers[1].index == 1);
}

TEST_CASE_FIXTURE(supervisor_fixture, "supervisor stops every reader when it exits") {
  for (const auto& r : spawned) self->monitor(r);
  self->monitor(supervisor);
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
  sched.run();
  std::size_t downs = 0;
  for (std::size_t i = 0; i < spawned.size() + 1; ++i)
    self->receive([&](caf::down_msg&) { ++downs; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  CHECK(downs == spawned.size() + 1);
  CHECK(spawned.size() == 3);  // an exit is not a death to repair
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
