// Real nodes: real actor systems, detached reader threads with real io_uring rings,
// a real socket for the middleman.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/node.hpp"
#include "messages/service.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/node.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

node_config small_node(const test::temp_dir& dir) {
  auto config = test::private_node(dir.path());
  config.node.log_level = "warn";
  config.read.readers = 2;
  config.transfer.slicers = 1;
  return config;
}

// The message of the startup_error that `config` must cause ("" if the node started).
std::string startup_failure(const node_config& config) {
  try {
    node n{config};
  } catch (const startup_error& e) {
    return e.what();
  }
  return {};
}

std::string expected_engine() { return probe_uring().usable() ? "io_uring" : "posix"; }

TEST_SUITE("node") {

TEST_CASE_FIXTURE(test::node_leaks, "node starts and stops 100 times with its detached readers") {
  test::temp_dir dir;
  const auto config = small_node(dir);
  for (int round = 0; round < 100; ++round) {
    node n{config};
    const auto stats = n.stats();
    REQUIRE(stats.readers.size() == 2);
    CHECK(stats.readers[1].engine == expected_engine());
    check_arena(n);
  }  // ~node stops it; a hang here is the failure
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "readers set up their rings with SINGLE_ISSUER and DEFER_TASKRUN where accepted") {
  if (!probe_uring().defer_taskrun()) {
    return test::skip_test("this kernel refuses SINGLE_ISSUER|DEFER_TASKRUN");
  }
  test::temp_dir dir;
  node n{small_node(dir)};
  const auto stats = n.stats();
  for (const auto& r : stats.readers) {
    CHECK(r.engine == "io_uring");
    CHECK((r.ring_flags & (1u << 12)) != 0);  // IORING_SETUP_SINGLE_ISSUER
    CHECK((r.ring_flags & (1u << 13)) != 0);  // IORING_SETUP_DEFER_TASKRUN
    CHECK(r.wakeups >= 1);                    // the stats request itself woke the ring
  }
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "read.engine = posix runs readers without a ring") {
  test::temp_dir dir;
  auto config = small_node(dir);
  config.read.engine = "posix";
  node n{config};
  for (const auto& r : n.stats().readers) {
    CHECK(r.engine == "posix");
    CHECK(r.ring_flags == 0);
  }
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "stop is idempotent and stats after stop is an error") {
  test::temp_dir dir;
  node n{small_node(dir)};
  check_arena(n);
  n.stop();
  n.stop();
  CHECK_THROWS_AS(n.stats(), std::runtime_error);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "the node service answers another actor system over the network and its "
                  "local interface is not published") {
  test::temp_dir dir;
  auto config = small_node(dir);
  config.node.listen = "127.0.0.1:0";
  node n{config};
  REQUIRE(n.listen_port() != 0);

  caf::actor_system_config client_config;
  configure_actor_system(client_config);
  caf::actor_system client{client_config};
  // The get that answers with arena addresses, and close, stay in this process.
  CHECK_FALSE(client.middleman().remote_actor<node_actor>("127.0.0.1", n.listen_port()));
  auto remote = client.middleman().remote_actor<remote_node_actor>("127.0.0.1", n.listen_port());
  REQUIRE_MESSAGE(remote, client.render(remote.error()));
  caf::scoped_actor self{client};
  std::size_t readers = 0;
  self->request(*remote, std::chrono::seconds(10), report_atom_v)
    .receive([&](node_report& r) { readers = r.node.readers.size(); },
             [&](caf::error& err) { FAIL("remote report: " << client.render(err)); });
  CHECK(readers == 2);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "asking for rdma without a device is a startup error that names tcp") {
  if (!list_rdma_devices().names.empty()) {
    return test::skip_test("this machine has an RDMA device");
  }
  test::temp_dir dir;
  auto config = small_node(dir);
  config.transfer.transport = "rdma";
  const auto message = startup_failure(config);
  CHECK(message.find("transfer.transport") != std::string::npos);
  CHECK(message.find("\"tcp\"") != std::string::npos);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a data dir that cannot be created is a startup error that names it") {
  test::temp_dir dir;
  auto config = small_node(dir);
  const auto file = dir.path() / "a-file";
  std::fclose(std::fopen(file.c_str(), "w"));
  config.storage.data_dir = (file / "data").string();
  const auto message = startup_failure(config);
  CHECK(message.find("storage.data_dir") != std::string::npos);
  CHECK(message.find(config.storage.data_dir) != std::string::npos);
}

TEST_CASE_FIXTURE(test::node_leaks, "a second node on the same data dir is refused and named") {
  test::temp_dir dir;
  node first{small_node(dir)};
  const auto message = startup_failure(small_node(dir));
  CHECK(message.find("storage.data_dir") != std::string::npos);
  CHECK(message.find("in use") != std::string::npos);
  check_arena(first);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a port already taken is a startup error that names node.listen") {
  test::temp_dir dir;
  auto config = small_node(dir);
  config.node.listen = "127.0.0.1:0";
  node first{config};
  test::temp_dir other_dir;
  config.storage.data_dir = other_dir.path().string();
  config.node.listen = "127.0.0.1:" + std::to_string(first.listen_port());
  CHECK(startup_failure(config).find("node.listen") != std::string::npos);
  check_arena(first);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
