// The embedding API against another process: a spillway::node in this test moves bytes
// with register_segment / connect_peer / transfer to a `spillway transfer-peer` child
// over tcp on 127.0.0.1, every byte checked by the peer's checksum message. A peer
// that SIGKILLs itself mid-batch (its [fault] config) fails the requests fast and by
// name, and the node goes on serving a new peer.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "actors/transport_host.hpp"
#include "actors/transport_routes.hpp"
#include "runtime/storage/crc32c.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tests/transfer_fixtures.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t chunk = 100003;  // a slice and a tail: not a multiple of either
constexpr std::uint64_t slice_timeout_ms = 60000;

node_config client_config(const test::temp_dir& dir) {
  auto config = test::private_node(dir.path());
  config.read.readers = 1;
  config.transfer.listen = "127.0.0.1:0";
  config.transfer.slicers = 1;
  config.transfer.tcp_lanes = 2;
  // Far above how long a failing batch may take: a failure that waited for it shows.
  config.transfer.slice_timeout_ms = slice_timeout_ms;
  return config;
}

// The test's own view of the peer's memory, apart from the node under test: an actor
// system the peers export their segments to as well. Built after the descriptors are
// counted and gone before they are checked.
struct checked_peers : test::node_leaks {
  test::networked_system checker;

  // The peer's segments go to the node under test and to the checker.
  std::vector<std::string> exports_for(node& n) {
    return {n.transfer_identity(), transfer_identity(checker.system)};
  }
};

// The peer's checksum of its segment's first `length` bytes.
std::uint32_t peer_checksum(test::networked_system& checker,
                            const test::transfer_peer_child& peer, std::uint64_t length) {
  const auto host = remote_transfer_host(checker.system, "127.0.0.1", peer.control_port);
  return range_checksum(checker.system, host, peer.segment, 0, length);
}

// `count` requests of `chunk` bytes between `local` and the peer's segment, back to back.
std::vector<transfer_status> transfer_chunks(node& n, const transfer_peer& peer,
                                             transfer_op op, std::byte* local,
                                             std::uint64_t count) {
  std::vector<transfer_request> requests;
  for (std::uint64_t i = 0; i < count; ++i)
    requests.push_back({op, local + i * chunk, peer.segments.at(0).id, i * chunk, chunk});
  return n.transfer(peer, std::move(requests)).get();
}

// Writes `count` chunks to `peer` and checks that its segment holds exactly those bytes.
void write_and_verify(test::networked_system& checker, node& n,
                      const test::transfer_peer_child& child, std::uint64_t count,
                      std::uint64_t seed) {
  const auto peer = n.connect_peer("127.0.0.1", child.control_port);
  REQUIRE(peer.segments.size() == 2);  // its segment and the read-only one
  REQUIRE(peer.segments[0].id == child.segment);
  auto source = test::pattern(count * chunk, seed);
  CHECK(transfer_chunks(n, peer, transfer_op::write, source.data(), count) ==
        std::vector<transfer_status>(count));
  CHECK(peer_checksum(checker, child, source.size()) ==
        crc32c(source.data(), source.size()));
}

TEST_SUITE("transfer-node-peer") {

TEST_CASE_FIXTURE(checked_peers,
                  "node writes and reads back a transfer-peer process on its configured control port") {
  const auto control_port = test::unused_port();
  test::temp_dir dir;
  node n{client_config(dir)};
  test::transfer_peer_child child{"[transfer]\ncontrol_port = " + std::to_string(control_port),
                                  "64MiB", exports_for(n)};
  CHECK(child.control_port == control_port);
  const std::uint64_t count = 600;  // 60 MB
  write_and_verify(checker, n, child, count, 1);
  const auto peer = n.connect_peer("127.0.0.1", child.control_port);
  std::vector<std::byte> back(count * chunk);
  CHECK(transfer_chunks(n, peer, transfer_op::read, back.data(), count) ==
        std::vector<transfer_status>(count));
  CHECK(back == test::pattern(count * chunk, 1));
  check_arena(n);
}

TEST_CASE_FIXTURE(checked_peers,
                  "transfer-peer killed mid-batch: requests fail fast by name and a new peer is served"
                  * doctest::test_suite("fault")) {
  test::temp_dir dir;
  node n{client_config(dir)};
  {
    test::transfer_peer_child dying{"[fault]\nenabled = true\ntcp_kill_after_slices = 300\n",
                                    "128MiB", exports_for(n)};
    const auto peer = n.connect_peer("127.0.0.1", dying.control_port);
    const std::uint64_t count = 1200;  // 1200 slices and tails, the peer dies after 300
    auto source = test::pattern(count * chunk, 2);
    const auto start = std::chrono::steady_clock::now();
    const auto statuses = transfer_chunks(n, peer, transfer_op::write, source.data(), count);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < std::chrono::milliseconds{slice_timeout_ms});
    std::size_t failed = 0;
    for (const auto& s : statuses) {
      if (s.ok()) continue;
      ++failed;
      CHECK_MESSAGE((s.error == transfer_error::peer_unreachable ||
                     s.error == transfer_error::lane_closed), to_string(s));
    }
    CHECK(failed > count / 2);
    CHECK(dying.process().finish() == 128 + SIGKILL);
    // The dead peer's route stays: each new request fails at once, named.
    const auto again = transfer_chunks(n, peer, transfer_op::write, source.data(), 1);
    CHECK(again[0].error == transfer_error::peer_unreachable);
  }
  test::transfer_peer_child fresh{"", "64MiB", exports_for(n)};
  write_and_verify(checker, n, fresh, 500, 3);
  check_arena(n);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
