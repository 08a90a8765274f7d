// A cluster of real `spillway serve` processes on 127.0.0.1, each on a free port, and
// spillway::client in this process: placement, batches spanning every node, a node
// killed with SIGKILL, restarted, and replicas.
#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "runtime/client.hpp"
#include "tests/cluster_fixture.hpp"
#include "tests/eventually.hpp"
#include "tests/faultfs_mount.hpp"
#include "tests/node_leaks.hpp"
#include "tests/serve_process.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using test::cluster_fixture;
using test::request_timeout_ms;

TEST_SUITE("cluster") {

TEST_CASE_FIXTURE(cluster_fixture,
                  "three nodes hold their rendezvous share, a batch spanning all three reads back "
                  "exact in order, a node killed fails fast as unavailable, restarted serves "
                  "again") {
  const auto cluster = start(1);
  make_values(3000);
  client c{cluster};
  put_all(c);

  // 3000 keys: a share's standard deviation is 0.9 %; 5 % is over 5 sigma.
  std::vector<std::uint64_t> owned(3);
  for (const auto& k : keys) ++owned[c.placed().owner(k)];
  CHECK(held(c) == owned);
  for (auto n : owned) CHECK(std::abs(static_cast<double>(n) / 3000 - 1.0 / 3) < 0.05);

  // The healthy batch's own time is the yardstick: under a sanitizer 3000 keys take
  // seconds either way, and failing fast means adding nothing near the timeout to it.
  const auto healthy_start = std::chrono::steady_clock::now();
  check_exact(c.get(keys));
  const auto healthy = std::chrono::steady_clock::now() - healthy_start;

  nodes[1].kill();
  const auto asked = std::chrono::steady_clock::now();
  const auto after_kill = c.get(keys);
  const auto took = std::chrono::steady_clock::now() - asked;
  CHECK(took < healthy + std::chrono::milliseconds{request_timeout_ms / 10});
  CHECK(check_dead(c, after_kill, 1) == owned[1]);

  nodes[1].start(nodes[1].port());
  REQUIRE(c.await_connected(30s) == 3);  // the client reconnected on its own
  check_exact(c.get(keys));
}

// The victim's reads are frozen in spillway-faultfs, so the batch is surely in flight on
// it when it dies: its keys must fail as the connection drops, not at the timeout.
TEST_CASE_FIXTURE(cluster_fixture,
                  "a node killed while a batch is in flight on it fails its keys fast as "
                  "unavailable and the rest are exact" * doctest::test_suite("fault")) {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  victim_on(fs);
  const auto cluster = start(1);
  make_values(600);
  client c{cluster};
  put_all(c);

  // Every read of a value: a sealed .bucket, or the .tmp of a bucket whose committed
  // records are served before the seal (group commit).
  const auto rule = fs.add("op=read fault=freeze");
  auto batch = std::async(std::launch::async, [&] { return c.get(keys); });
  REQUIRE(test::eventually([&] { return fs.held(rule) > 0; }));
  const auto killed = std::chrono::steady_clock::now();
  nodes[1].kill();
  const auto got = batch.get();
  const auto took = std::chrono::steady_clock::now() - killed;
  MESSAGE("a dead node's keys failed "
          << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
          << " ms after SIGKILL (cluster.request_timeout_ms = " << request_timeout_ms << ")");
  CHECK(took < std::chrono::milliseconds{request_timeout_ms / 20});
  CHECK(check_dead(c, got, 1) > 0);

  fs.clear();
  nodes[1].start(nodes[1].port());
  REQUIRE(c.await_connected(30s) == 3);
  check_exact(c.get(keys));
  CHECK(nodes[1].stop(SIGTERM) == 0);  // off the mount before it goes
}

TEST_CASE_FIXTURE(cluster_fixture, "with replicas = 2 no key is lost when a node dies") {
  const auto cluster = start(2);
  make_values(600);
  client c{cluster};
  put_all(c);
  const auto copies = held(c);
  CHECK(copies[0] + copies[1] + copies[2] == 2 * keys.size());
  REQUIRE(copies[0] > 0);  // the node about to die holds keys of its own

  nodes[0].kill();
  check_exact(c.get(keys));
  CHECK(c.exists(keys).prefix == keys.size());
}

TEST_CASE_FIXTURE(cluster_fixture,
                  "the CLI puts gets checks and removes keys on the nodes of --cluster FILE and "
                  "on one --node") {
  const auto cluster = start(1);
  make_values(6);
  test::temp_dir dir;
  const auto nodes_file = (dir.path() / "cluster.toml").string();
  std::ofstream{nodes_file} << "[cluster]\nnodes = [\"" << cluster.nodes[0] << "\", \""
                            << cluster.nodes[1] << "\", \"" << cluster.nodes[2] << "\"]\n";
  const placement placed{cluster.nodes};
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const auto file = (dir.path() / std::to_string(k)).string();
    std::ofstream{file, std::ios::binary} << values[k];
    const auto put = test::run_spillway({"put", keys[k], file, "--cluster", nodes_file});
    REQUIRE_MESSAGE(put.exit_code == 0, put.err);
  }
  // Each key went to its owner alone: asked of it, the value; of another node, not found.
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const auto owner = placed.owner(keys[k]);
    const auto got = test::run_spillway({"get", keys[k], "--node", cluster.nodes[owner]});
    CHECK_MESSAGE(got.exit_code == 0, got.err);
    CHECK(got.out == values[k]);
    const auto elsewhere =
      test::run_spillway({"get", keys[k], "--node", cluster.nodes[(owner + 1) % 3]});
    CHECK(elsewhere.exit_code == 1);
    CHECK(elsewhere.err.find(keys[k] + ": not_found") != std::string::npos);
  }
  const auto there =
    test::run_spillway({"exists", keys[0], keys[1], "nowhere", keys[2], "--cluster", nodes_file});
  CHECK(there.exit_code == 0);
  CHECK(there.out == "present " + keys[0] + "\npresent " + keys[1] + "\nabsent nowhere\npresent " +
                       keys[2] + "\nprefix 2\n");
  const auto removed = test::run_spillway({"rm", keys[0], keys[1], "--cluster", nodes_file});
  CHECK(removed.exit_code == 0);
  CHECK(removed.out == "removed 2\n");
  const auto gone = test::run_spillway({"get", keys[0], "--cluster", nodes_file});
  CHECK(gone.exit_code == 1);
  CHECK(gone.err.find(keys[0] + ": not_found") != std::string::npos);

  const auto dead = placed.owner(keys[2]);
  nodes[dead].kill();
  const auto down = test::run_spillway({"get", keys[2], "--cluster", nodes_file});
  CHECK(down.exit_code == 1);
  CHECK_MESSAGE(down.err.find(keys[2] + ": unavailable") != std::string::npos, down.err);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
