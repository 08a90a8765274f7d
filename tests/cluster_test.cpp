// A cluster of real `spillway serve` processes on 127.0.0.1, each on a free port, and
// spillway::client in this process: placement, batches spanning every node, a node
// killed with SIGKILL, restarted, and replicas.
#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "runtime/client.hpp"
#include "tests/node_leaks.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t seed = 14;
// A put of a whole batch, then a get: the nodes are asked at once, so even on a shared
// machine a batch answers in seconds. A dead node must fail far below this.
constexpr std::uint64_t request_timeout_ms = 20000;

// One `spillway serve` with a data dir of its own; started on a free port, restarted on
// the same one.
class serve_process {
public:
  void start(std::uint16_t port) {
    const auto config = (dir_.path() / "node.toml").string();
    std::ofstream{config} << "[node]\nlisten = \"127.0.0.1:" << port << "\"\n"
                          << "[storage]\ndata_dir = \"" << (dir_.path() / "data").string()
                          << "\"\nseal_after_ms = 5\n"
                          << "[read]\narena_size = \"64MiB\"\narena_chunk = \"64MiB\"\n"
                          << "readers = 1\n";
    process_.emplace(std::vector<std::string>{SPILLWAY_BINARY, "serve", "-c", config});
    REQUIRE_MESSAGE(process_->wait_for_stderr("serving", 60s), process_->err());
    const auto& err = process_->err();
    const auto at = err.find("listening on port ");
    REQUIRE(at != std::string::npos);
    port_ = static_cast<std::uint16_t>(std::stoul(err.substr(at + 18)));
  }

  void kill() {
    process_->send_signal(SIGKILL);
    CHECK(process_->finish() == 128 + SIGKILL);
    process_.reset();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::uint16_t port() const { return port_; }

private:
  test::temp_dir dir_;
  std::optional<test::child_process> process_;
  std::uint16_t port_ = 0;
};

struct cluster_fixture : test::node_leaks {
  std::vector<serve_process> nodes = std::vector<serve_process>(3);
  std::vector<std::string> keys;
  std::vector<std::string> values;

  cluster_section start(std::uint64_t replicas) {
    cluster_section c;
    for (auto& n : nodes) {
      n.start(0);
      c.nodes.push_back(n.address());
    }
    c.replicas = replicas;
    c.request_timeout_ms = request_timeout_ms;
    return c;
  }

  // Mixed sizes, from one byte to 70 KB.
  void make_values(std::size_t count) {
    constexpr std::size_t sizes[] = {1, 700, 4096, 20000, 70000};
    for (std::size_t i = 0; i < count; ++i) {
      keys.push_back(generated_key("kv/", i));
      values.push_back(generated_value(sizes[i % 5], seed, keys.back()));
    }
  }

  // Keys held by each node, as each node itself counts them.
  static std::vector<std::uint64_t> held(client& c) {
    std::vector<std::uint64_t> out;
    for (const auto& r : c.stats()) {
      CHECK_MESSAGE(r.error.empty(), r.node << ": " << r.error);
      out.push_back(r.report.store.keys);
    }
    return out;
  }
};

TEST_SUITE("cluster") {

TEST_CASE_FIXTURE(cluster_fixture,
                  "three nodes hold their rendezvous share, a batch spanning all three reads back "
                  "exact in order, a node killed fails fast as unavailable, restarted serves "
                  "again") {
  const auto cluster = start(1);
  make_values(3000);
  client c{cluster};
  REQUIRE(c.await_connected(30s) == 3);
  for (const auto& s : c.put(keys, values)) REQUIRE(s.ok());

  // 3000 keys: a share's standard deviation is 0.9 %; 5 % is over 5 sigma.
  std::vector<std::uint64_t> owned(3);
  for (const auto& k : keys) ++owned[c.placed().owner(k)];
  CHECK(held(c) == owned);
  for (auto n : owned) CHECK(std::abs(static_cast<double>(n) / 3000 - 1.0 / 3) < 0.05);

  const auto got = c.get(keys);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(got[k].status.ok(), keys[k] << ": " << to_string(got[k].status));
    REQUIRE(got[k].value == values[k]);
  }

  nodes[1].kill();
  const auto asked = std::chrono::steady_clock::now();
  const auto after_kill = c.get(keys);
  const auto took = std::chrono::steady_clock::now() - asked;
  CHECK(took < std::chrono::milliseconds{request_timeout_ms / 10});
  std::size_t unavailable = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (c.placed().owner(keys[k]) == 1) {
      CHECK(after_kill[k].status == key_status{key_error::unavailable, 0});
      ++unavailable;
    } else {
      CHECK(after_kill[k].status.ok());
      CHECK(after_kill[k].value == values[k]);
    }
  }
  CHECK(unavailable == owned[1]);

  nodes[1].start(nodes[1].port());
  REQUIRE(c.await_connected(30s) == 3);  // the client reconnected on its own
  const auto restarted = c.get(keys);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(restarted[k].status.ok(), keys[k] << ": " << to_string(restarted[k].status));
    REQUIRE(restarted[k].value == values[k]);
  }
}

TEST_CASE_FIXTURE(cluster_fixture, "with replicas = 2 no key is lost when a node dies") {
  const auto cluster = start(2);
  make_values(600);
  client c{cluster};
  REQUIRE(c.await_connected(30s) == 3);
  for (const auto& s : c.put(keys, values)) REQUIRE(s.ok());
  const auto copies = held(c);
  CHECK(copies[0] + copies[1] + copies[2] == 2 * keys.size());
  REQUIRE(copies[0] > 0);  // the node about to die holds keys of its own

  nodes[0].kill();
  const auto got = c.get(keys);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(got[k].status.ok(), keys[k] << ": " << to_string(got[k].status));
    REQUIRE(got[k].value == values[k]);
  }
  CHECK(c.exists(keys).prefix == keys.size());
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
