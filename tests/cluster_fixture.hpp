// Three real `spillway serve` processes on 127.0.0.1, each on a free port, and the
// keys and values a test puts there and checks: what the cluster and get_into tests
// share.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/client.hpp"
#include "tests/faultfs_mount.hpp"
#include "tests/node_leaks.hpp"
#include "tests/serve_process.hpp"
#include "tools/generated_value.hpp"

namespace spillway::test {

constexpr std::uint64_t seed = 14;
// A put of a whole batch, then a get: the nodes are asked at once, so even on a shared
// machine a batch answers in seconds. A dead node must fail far below this.
constexpr std::uint64_t request_timeout_ms = 20000;

struct cluster_fixture : node_leaks {
  std::vector<serve_process> nodes = std::vector<serve_process>(3);
  std::vector<std::string> keys;
  std::vector<std::string> values;

  cluster_section start(std::uint64_t replicas) {
    cluster_section c;
    for (auto& n : nodes) {
      n.start();
      c.nodes.push_back(n.address());
    }
    c.replicas = replicas;
    c.request_timeout_ms = request_timeout_ms;
    return c;
  }

  // `count` keys whose values take `sizes` in turn; by default from one byte to 70 KB.
  void make_values(std::size_t count,
                   std::initializer_list<std::size_t> sizes = {1, 700, 4096, 20000, 70000}) {
    for (std::size_t i = 0; i < count; ++i) {
      keys.push_back(generated_key("kv/", i));
      values.push_back(generated_value(sizes.begin()[i % sizes.size()], seed, keys.back()));
    }
  }

  // A size per key, its value's: a buffer for each, as large as its value.
  std::vector<std::size_t> value_sizes() const {
    std::vector<std::size_t> out;
    for (const auto& v : values) out.push_back(v.size());
    return out;
  }

  // Node 1 keeps its data inside `fs`, whose rules may freeze its reads, with its own
  // read deadline out of the way: only its death ends a batch frozen there.
  void victim_on(faultfs_mount& fs) {
    nodes[1].data_dir = fs.mountpoint() / "data";
    nodes[1].read_keys = "timeout_ms = 600000\n";
  }

  // Once `c` reaches every node: every key put, each ok.
  void put_all(client& c) const {
    REQUIRE(c.await_connected(std::chrono::seconds(30)) == nodes.size());
    for (const auto& s : c.put(keys, values)) REQUIRE(s.ok());
  }

  // Every key back with its exact value.
  void check_exact(const std::vector<read_value>& got) const {
    REQUIRE(got.size() == keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k) {
      REQUIRE_MESSAGE(got[k].status.ok(), keys[k] << ": " << to_string(got[k].status));
      REQUIRE(got[k].value == values[k]);
    }
  }

  // With node `dead` gone: its keys unavailable, every other key exact; how many were its.
  std::size_t check_dead(const client& c, const std::vector<read_value>& got,
                         std::uint32_t dead) const {
    std::size_t unavailable = 0;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (c.placed().owner(keys[k]) == dead) {
        CHECK(got[k].status == key_status{key_error::unavailable, 0});
        ++unavailable;
      } else {
        REQUIRE_MESSAGE(got[k].status.ok(), keys[k] << ": " << to_string(got[k].status));
        CHECK(got[k].value == values[k]);
      }
    }
    return unavailable;
  }

  // Every node's arena has every extent back: no lease left out after the transfers.
  static bool arenas_clean(client& c) {
    for (const auto& r : c.stats())
      if (!r.error.empty() || r.report.arena.leases != 0 ||
          r.report.arena.free_bytes != r.report.arena.ready_bytes)
        return false;
    return true;
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

}  // namespace spillway::test
