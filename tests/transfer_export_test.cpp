// Per-peer export: a segment is reachable only by the peers it was exported to, a
// read-only one refuses writes, and an unregistered one refuses everything after. The
// refusals are per request and named; the owner keeps serving. Against a real
// `spillway transfer-peer` process (a raw lane for a peer it did not export to), and
// between two nodes of this process over tcp and local.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <caf/scoped_actor.hpp>

#include "actors/transport_host.hpp"
#include "actors/transport_routes.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/node.hpp"
#include "runtime/storage/crc32c.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/transfer_fixtures.hpp"

namespace spillway {
namespace {

using test::transfer_node;

constexpr std::chrono::seconds log_limit{10};  // a bound for a hung owner, not a wait

transfer_section requester_section() {
  transfer_section transfer;
  transfer.slicers = 1;
  transfer.tcp_lanes = 2;
  transfer.slice_timeout_ms = 20000;
  return transfer;
}

std::vector<transfer_status> run(caf::actor_system& system, transfer_route& route,
                                 transfer_batch batch) {
  caf::scoped_actor self{system};
  std::vector<transfer_status> statuses;
  self->request(route.pick(), caf::infinite, transfer_atom_v, std::move(batch))
    .receive([&](transfer_reply& r) { statuses = std::move(r.statuses); },
             [&](caf::error& err) { FAIL(system.render(err)); });
  return statuses;
}

TEST_SUITE("transfer-security") {

// The stranger is admitted (it described, so it holds a ticket of its own), yet the
// owner refuses its frame on a segment exported to another peer.
TEST_CASE("a frame naming a segment not exported to its peer fails as not_exported") {
  test::networked_system trusted;
  test::transfer_peer_child owner{"", "16MiB", {transfer_identity(trusted.system)}};
  auto route = open_tcp_route(trusted.system, requester_section(), "127.0.0.1",
                              owner.control_port);
  test::networked_system stranger;
  auto theirs = open_tcp_route(stranger.system, requester_section(), "127.0.0.1",
                               owner.control_port);
  CHECK(theirs.peer.segments.empty());
  std::vector<std::byte> bytes = test::pattern(4096, 5);
  // Through its own slicer: the segment is unknown to it, refused before it leaves.
  CHECK(run(stranger.system, theirs, {{transfer_op::read, bytes.data(), owner.segment, 0, 4096}})
          .at(0)
          .error == transfer_error::unknown_segment);
  // On a raw lane with its own ticket: the owner's check answers.
  auto fd = test::admitted_connection(owner.data_port, theirs.peer.lane_route,
                                      theirs.peer.lane_secret);
  const auto read = encode_frame({frame_kind::read, {}, 1, owner.segment, 0, 4096});
  REQUIRE(send_all(fd.get(), read.data(), read.size()));
  frame_bytes reply;
  frame_header status;
  REQUIRE(recv_all(fd.get(), reply.data(), reply.size()));
  REQUIRE(decode_frame(reply, status) == transfer_error::none);
  CHECK(status.error == transfer_error::not_exported);
  CHECK(owner.process().wait_for_stderr("refused a frame: not_exported", log_limit));
  // The trusted peer is served as before.
  CHECK(run(trusted.system, route, {{transfer_op::write, bytes.data(), owner.segment, 0, 4096}})
          .at(0)
          .ok());
  CHECK(range_checksum(trusted.system, route.host, owner.segment, 0, 4096) ==
        crc32c(bytes.data(), 4096));
  close_route(theirs);
  close_route(route);
}

TEST_CASE("a write to a read-only segment fails as read_only and reads of it succeed") {
  test::networked_system trusted;
  test::transfer_peer_child owner{"", "16MiB", {transfer_identity(trusted.system)}};
  auto route = open_tcp_route(trusted.system, requester_section(), "127.0.0.1",
                              owner.control_port);
  std::vector<std::byte> bytes = test::pattern(8192, 6);
  std::vector<std::byte> back(8192, std::byte{1});
  const auto statuses =
    run(trusted.system, route,
        {{transfer_op::write, bytes.data(), owner.read_only_segment, 0, 4096},
         {transfer_op::read, back.data(), owner.read_only_segment, 0, 4096},
         {transfer_op::write, bytes.data(), owner.segment, 0, 8192}});
  REQUIRE(statuses.size() == 3);
  CHECK(statuses[0].error == transfer_error::read_only);
  CHECK(statuses[1].ok());
  CHECK(statuses[2].ok());
  CHECK(back[0] == std::byte{0});  // the read-only segment is still zeroed
  CHECK(owner.process().wait_for_stderr("refused a frame: read_only", log_limit));
  CHECK(range_checksum(trusted.system, route.host, owner.segment, 0, 8192) ==
        crc32c(bytes.data(), 8192));
  close_route(route);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "an unregistered segment fails later requests as not_exported over tcp and local") {
  for (const std::string transport : {"tcp", "local"}) {
    CAPTURE(transport);
    test::temp_dir owner_dir, client_dir;
    node owner{transfer_node(owner_dir, transport)}, client{transfer_node(client_dir, transport)};
    std::vector<std::byte> memory(1 << 16), kept(1 << 16);
    const auto to_client = segment_export::to({client.transfer_identity()});
    const auto segment = owner.register_segment(memory.data(), memory.size(), to_client);
    const auto other = owner.register_segment(kept.data(), kept.size(), to_client);
    const auto peer = client.connect_peer("127.0.0.1", owner.transfer_port());
    auto source = test::pattern(4096, 8);
    auto write = [&](std::uint64_t id) {
      return client.transfer(peer, {{transfer_op::write, source.data(), id, 0, 4096}}).get().at(0);
    };
    CHECK(write(segment.id).ok());
    CHECK(owner.unregister_segment(segment.id));
    CHECK_FALSE(owner.unregister_segment(segment.id));  // once
    std::memset(memory.data(), 0, 4096);
    CHECK(write(segment.id).error == transfer_error::not_exported);
    CHECK(memory[0] == std::byte{0});  // nothing landed after the unregister
    CHECK(write(other.id).ok());       // the owner keeps serving the rest
    CHECK(owner.transfers().refused_frames == (transport == "tcp" ? 1u : 0u));
    const auto again = client.connect_peer("127.0.0.1", owner.transfer_port());
    CHECK(again.segments.size() == 1);  // withdrawn from what describe lists
    check_arena(owner);
    check_arena(client);
  }
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a segment exported to another peer or to nobody is out of reach over tcp and local") {
  for (const std::string transport : {"tcp", "local"}) {
    CAPTURE(transport);
    test::temp_dir owner_dir, client_dir;
    node owner{transfer_node(owner_dir, transport)}, client{transfer_node(client_dir, transport)};
    std::vector<std::byte> elsewhere(4096), nobody(4096);
    const auto to_other = owner.register_segment(elsewhere.data(), elsewhere.size(),
                                                 segment_export::to({"another peer"}));
    const auto private_one = owner.register_segment(nobody.data(), nobody.size());
    const auto peer = client.connect_peer("127.0.0.1", owner.transfer_port());
    CHECK(peer.segments.empty());
    CHECK(peer.identity == owner.transfer_identity());
    auto source = test::pattern(4096, 9);
    for (const auto id : {to_other.id, private_one.id}) {
      const auto status =
        client.transfer(peer, {{transfer_op::write, source.data(), id, 0, 4096}}).get().at(0);
      CHECK_FALSE(status.ok());
    }
    CHECK(elsewhere[0] == std::byte{0});
    CHECK(nobody[0] == std::byte{0});
    check_arena(owner);
    check_arena(client);
  }
}

// The local transport copies through the peer's segment table, found in this process
// only: a peer in another process is refused, whatever it claims.
TEST_CASE_FIXTURE(test::node_leaks, "a local route to a peer in another process is refused") {
  test::temp_dir dir;
  node client{transfer_node(dir, "local")};
  test::transfer_peer_child owner{"", "16MiB", {client.transfer_identity()}};
  try {
    client.connect_peer("127.0.0.1", owner.control_port);
    FAIL("a local route opened to another process");
  } catch (const std::runtime_error& e) {
    CHECK(std::string{e.what()}.find("is another process") != std::string::npos);
  }
  check_arena(client);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
