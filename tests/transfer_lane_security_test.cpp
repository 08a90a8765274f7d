// Attacks on a tcp data port, against a real `spillway transfer-peer` process on
// 127.0.0.1, from raw sockets: a lane with no hello, a wrong ticket, another route's
// ticket, too many lanes, an idle lane, a half-sent frame. Each is refused or closed,
// named in the owner's log (the proof the fault happened), and the owner keeps serving
// the route this test holds. Waits are bounded polls for end of stream, never sleeps.
#include <doctest/doctest.h>

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <caf/scoped_actor.hpp>

#include "actors/transport_host.hpp"
#include "actors/transport_routes.hpp"
#include "config/config.hpp"
#include "runtime/node.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/storage/crc32c.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tests/transfer_fixtures.hpp"

namespace spillway {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds eof_limit{10000};  // a bound for a hung owner, not a wait

// The owner's small caps and timeouts, so that each fault shows within a test.
constexpr std::string_view owner_config =
  "[transfer]\n"
  "max_lanes = 6\n"
  "max_lanes_per_peer = 6\n"
  "lane_idle_timeout_ms = 600\n"
  "frame_timeout_ms = 300\n";

transfer_section requester_section() {
  transfer_section transfer;
  transfer.slicers = 1;
  transfer.tcp_lanes = 1;
  transfer.slice_timeout_ms = 20000;
  return transfer;
}

// Whether the other end closed `fd` within `limit`: reads (and drops) whatever comes
// first, until end of stream or a reset.
bool closed_within(int fd, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char sink[256];
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const auto n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n <= 0) return true;  // 0: end of stream; < 0: reset
  }
}

unique_fd raw_connection(std::uint16_t port) {
  int error = 0;
  auto fd = connect_tcp("127.0.0.1", port, error);
  REQUIRE(fd);
  return fd;
}

// An owner process exporting its segments to this test's actor system, and a route to it.
struct owner_fixture {
  test::networked_system networked;
  caf::actor_system& system = networked.system;
  test::transfer_peer_child owner{owner_config, "16MiB", {transfer_identity(system)}};
  transfer_route route = open_tcp_route(system, requester_section(), "127.0.0.1",
                                        owner.control_port);
  std::vector<std::byte> source = test::pattern(1 << 20, 11);

  ~owner_fixture() { close_route(route); }

  // A legitimate write of 1 MiB, checked by the owner's checksum.
  bool legit_transfer_works() {
    caf::scoped_actor self{system};
    bool ok = false;
    self->request(route.pick(), caf::infinite, transfer_atom_v,
                  transfer_batch{{transfer_op::write, source.data(), owner.segment, 0,
                                  source.size()}})
      .receive([&](transfer_reply& r) { ok = r.statuses.size() == 1 && r.statuses[0].ok(); },
               [&](caf::error& err) { FAIL(system.render(err)); });
    return ok && range_checksum(system, route.host, owner.segment, 0, source.size()) ==
                   crc32c(source.data(), source.size());
  }

  bool logged(std::string_view line) {
    return owner.process().wait_for_stderr(line, eof_limit);
  }
};

// A write frame of `length` poison bytes at offset 0 of `segment`: what an attacker
// would land if the owner served it.
std::vector<std::byte> poison_write(std::uint64_t segment, std::uint64_t length) {
  const auto header = encode_frame({frame_kind::write, {}, 1, segment, 0, length});
  std::vector<std::byte> bytes(frame_header_size + length, std::byte{0xa5});
  std::memcpy(bytes.data(), header.data(), header.size());
  return bytes;
}

TEST_SUITE("transfer-security") {

TEST_CASE("a lane without a hello is refused and named in the log") {
  owner_fixture f;
  REQUIRE(f.legit_transfer_works());
  auto fd = raw_connection(f.owner.data_port);
  const auto attack = poison_write(f.owner.segment, 4096);
  send_all(fd.get(), attack.data(), attack.size());  // the owner may close before all is in
  CHECK(closed_within(fd.get(), eof_limit));
  CHECK(f.logged("refused a lane from 127.0.0.1: not admitted: first frame is not a hello"));
  CHECK(f.legit_transfer_works());  // and the poison never landed: the checksum holds
}

TEST_CASE("a lane that sends nothing is refused after frame_timeout_ms") {
  owner_fixture f;
  auto fd = raw_connection(f.owner.data_port);
  CHECK(closed_within(fd.get(), eof_limit));
  CHECK(f.logged("not admitted: no hello within transfer.frame_timeout_ms"));
  CHECK(f.legit_transfer_works());
}

TEST_CASE("a lane with a wrong ticket is refused and named in the log") {
  owner_fixture f;
  REQUIRE(f.legit_transfer_works());
  auto secret = f.route.peer.lane_secret;
  REQUIRE(secret.size() == lane_secret_size);
  secret.back() = static_cast<char>(secret.back() ^ 1);  // one bit off
  auto fd = raw_connection(f.owner.data_port);
  const auto hello = test::hello_bytes(f.route.peer.lane_route, secret);
  const auto write = poison_write(f.owner.segment, 4096);
  send_all(fd.get(), hello.data(), hello.size());
  send_all(fd.get(), write.data(), write.size());  // the owner may close before all is in
  CHECK(closed_within(fd.get(), eof_limit));
  CHECK(f.logged("refused a lane from 127.0.0.1: not admitted: wrong ticket"));
  CHECK(f.legit_transfer_works());
}

// Another peer's ticket is good only for that peer's route: its secret under this
// route's id, or this route's secret under its id, is a wrong ticket.
TEST_CASE("a lane with the ticket of another route is refused") {
  owner_fixture f;
  test::networked_system other;
  const auto host = remote_transfer_host(other.system, "127.0.0.1", f.owner.control_port);
  const auto theirs = describe_peer(other.system, requester_section(), host);
  REQUIRE(theirs.lane_route != f.route.peer.lane_route);
  CHECK(theirs.segments.empty());  // nothing is exported to that peer
  for (const auto& [route, secret] :
       {std::pair{f.route.peer.lane_route, theirs.lane_secret},
        std::pair{theirs.lane_route, f.route.peer.lane_secret}}) {
    auto fd = raw_connection(f.owner.data_port);
    const auto hello = test::hello_bytes(route, secret);
    send_all(fd.get(), hello.data(), hello.size());
    CHECK(closed_within(fd.get(), eof_limit));
  }
  CHECK(f.logged("not admitted: wrong ticket"));
  CHECK(f.legit_transfer_works());
}

TEST_CASE("lanes beyond max_lanes_per_peer are refused at accept") {
  owner_fixture f;  // its route's lane connects on the first transfer: none open yet
  std::vector<unique_fd> held;
  for (int i = 0; i < 6; ++i)  // admitted and idle: 6 of 6
    held.push_back(test::admitted_connection(f.owner.data_port, f.route.peer.lane_route,
                                             f.route.peer.lane_secret));
  // Each held lane is counted once its session runs; the next one is over the cap.
  auto over = raw_connection(f.owner.data_port);
  CHECK(closed_within(over.get(), eof_limit));
  CHECK(f.logged("transfer.max_lanes_per_peer = 6"));
  held.clear();  // the owner sees them go and serves the route again
  CHECK(f.legit_transfer_works());
}

TEST_CASE("an idle lane is closed after lane_idle_timeout_ms") {
  owner_fixture f;
  auto fd = test::admitted_connection(f.owner.data_port, f.route.peer.lane_route,
                                      f.route.peer.lane_secret);
  const auto start = std::chrono::steady_clock::now();
  CHECK(closed_within(fd.get(), eof_limit));
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds{500});  // not at once
  CHECK(f.logged("idle past transfer.lane_idle_timeout_ms"));
  CHECK(f.legit_transfer_works());  // its lane was idle too: it reconnects
}

// A frame begun must end within frame_timeout_ms; a write cut short is the requester's
// failure, and the range it named is undefined until written again (README).
TEST_CASE("a half-sent frame is closed after frame_timeout_ms") {
  owner_fixture f;
  for (const std::size_t sent : {std::size_t{20}, frame_header_size + 1000}) {
    CAPTURE(sent);
    auto fd = test::admitted_connection(f.owner.data_port, f.route.peer.lane_route,
                                        f.route.peer.lane_secret);
    const auto frame = poison_write(f.owner.segment, 4096);
    REQUIRE(send_all(fd.get(), frame.data(), sent));
    CHECK(closed_within(fd.get(), eof_limit));
  }
  CHECK(f.logged("a frame unfinished past transfer.frame_timeout_ms"));
  CHECK(f.legit_transfer_works());
}

TEST_CASE("describe tells a tcp peer no addresses and only what is exported to it") {
  owner_fixture f;
  REQUIRE(f.route.peer.segments.size() == 2);  // the segment and the read-only one
  for (const auto& d : f.route.peer.segments) {
    CHECK(d.base == 0);
    CHECK(d.rkey == 0);
    CHECK(d.length > 0);
  }
  CHECK(f.route.peer.lane_secret.size() == lane_secret_size);
  test::networked_system stranger;
  const auto host = remote_transfer_host(stranger.system, "127.0.0.1", f.owner.control_port);
  CHECK(describe_peer(stranger.system, requester_section(), host).segments.empty());
  CHECK_THROWS_AS(range_checksum(stranger.system, host, f.owner.segment, 0, 1),
                  std::runtime_error);  // a checksum of what is not exported to it
  CHECK(f.logged("refused a checksum of segment 1"));
}

// The same refusals in a node of this process, proven by its own counters: each is
// counted before the connection is closed, so a close seen means a count made.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a node counts the lanes it refused or timed out in its transfer stats") {
  test::temp_dir dir;
  auto config = test::private_node(dir.path());
  config.node.log_level = "off";
  config.read.readers = 1;
  config.transfer.listen = "127.0.0.1:0";
  config.transfer.max_lanes = 2;
  config.transfer.max_lanes_per_peer = 2;
  config.transfer.lane_idle_timeout_ms = 300;
  config.transfer.frame_timeout_ms = 200;
  test::networked_system requester;
  {
    node owner{config};
    std::vector<std::byte> memory(4096);
    owner.register_segment(memory.data(), memory.size(),
                           segment_export::to({transfer_identity(requester.system)}));
    const auto host = remote_transfer_host(requester.system, "127.0.0.1", owner.transfer_port());
    const auto ticket = describe_peer(requester.system, requester_section(), host);

    auto bare = raw_connection(ticket.data_port);
    const auto attack = poison_write(1, 64);
    send_all(bare.get(), attack.data(), attack.size());
    CHECK(closed_within(bare.get(), eof_limit));
    CHECK(owner.transfers().refused_lanes == 1);

    auto idle =
      test::admitted_connection(ticket.data_port, ticket.lane_route, ticket.lane_secret);
    CHECK(closed_within(idle.get(), eof_limit));
    CHECK(owner.transfers().timed_out_lanes == 1);

    std::vector<unique_fd> held;
    for (int i = 0; i < 2; ++i)
      held.push_back(
        test::admitted_connection(ticket.data_port, ticket.lane_route, ticket.lane_secret));
    auto over = raw_connection(ticket.data_port);
    CHECK(closed_within(over.get(), eof_limit));
    CHECK(owner.transfers().capped_lanes == 1);
    CHECK(memory[0] == std::byte{0});  // no attack landed
    check_arena(owner);
  }
}

TEST_CASE("the lane caps and timeouts are read from [transfer] and checked by key and line") {
  const auto config = load_config_text(owner_config, "node.toml");
  CHECK(config.transfer.max_lanes == 6);
  CHECK(config.transfer.frame_timeout_ms == 300);
  CHECK(load_config_text("", "empty.toml").transfer.max_lanes_per_peer == 64);
  for (const std::string key :
       {"max_lanes", "max_lanes_per_peer", "lane_idle_timeout_ms", "frame_timeout_ms"}) {
    CAPTURE(key);
    std::string problem;
    try {
      load_config_text("[transfer]\n" + key + " = 0\n", "node.toml");
    } catch (const std::exception& e) {
      problem = e.what();
    }
    CHECK(problem.find("node.toml:2:") != std::string::npos);
    CHECK(problem.find("transfer." + key) != std::string::npos);
  }
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
