// The tcp transport between two real processes: this test process cuts and sends,
// a `spillway transfer-peer` child owns the segment. Bytes are verified by the
// peer's checksum message; faults are the peer's own (its [fault] config: a lane
// dropped, SIGKILL) or hostile frames written on raw sockets.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <csignal>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/exit_guard.hpp"
#include "actors/transport_host.hpp"
#include "actors/transport_routes.hpp"
#include "runtime/storage/crc32c.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "tests/transfer_fixtures.hpp"

namespace spillway {
namespace {

struct tcp_peer_fixture {
  test::networked_system networked;
  caf::actor_system& system = networked.system;
  test::transfer_peer_child peer;
  transfer_route route;

  explicit tcp_peer_fixture(std::string_view peer_config = "",
                            transfer_section transfer = tcp_section())
      : peer(peer_config, "700MiB", {transfer_identity(system)}) {
    route = open_tcp_route(system, transfer, "127.0.0.1", peer.control_port);
  }
  ~tcp_peer_fixture() { close_route(route); }

  static transfer_section tcp_section() {
    transfer_section transfer;
    transfer.slicers = 1;
    transfer.slice_timeout_ms = 600000;  // a test that waited on it would hang, not pass
    return transfer;
  }

  transfer_reply run(transfer_batch batch) {
    caf::scoped_actor self{system};
    transfer_reply reply;
    self->request(route.pick(), caf::infinite, transfer_atom_v, std::move(batch))
      .receive([&](transfer_reply& r) { reply = std::move(r); },
               [&](caf::error& err) { FAIL(system.render(err)); });
    return reply;
  }

  std::uint32_t peer_checksum(std::uint64_t offset, std::uint64_t length) {
    return range_checksum(system, route.host, peer.segment, offset, length);
  }
};

// `count` equal chunks of `total` bytes, each its own request, back to back.
transfer_batch chunked(transfer_op op, std::byte* local, std::uint64_t segment,
                       std::uint64_t total, std::uint64_t count) {
  transfer_batch batch(count);
  const auto chunk = total / count;
  for (std::uint64_t i = 0; i < count; ++i)
    batch[i] = {op, local + i * chunk, segment, i * chunk, chunk};
  return batch;
}

bool all_ok(const transfer_reply& reply) {
  for (const auto& s : reply.statuses)
    if (!s.ok()) return false;
  return !reply.statuses.empty();
}

TEST_SUITE("transfer-tcp") {

TEST_CASE("tcp moves every case of the table to another process") {
  tcp_peer_fixture f;
  const std::pair<std::uint64_t, std::uint64_t> cases[] = {
    {200, 5000}, {200, 10000}, {300, 8000}, {400, 10000},
    {500, 15000}, {600, 12000}, {700, 20000}, {700, 10000}};
  for (const auto& [megabytes, count] : cases) {
    CAPTURE(megabytes);
    CAPTURE(count);
    const std::uint64_t total = megabytes * 1000000 / count * count;
    auto source = test::pattern(total, count + megabytes);
    const auto segment = f.peer.segment;
    const auto reply = f.run(chunked(transfer_op::write, source.data(), segment, total, count));
    CHECK(all_ok(reply));
    CHECK(f.peer_checksum(0, total) == crc32c(source.data(), total));
  }
}

TEST_CASE("tcp reads bring back what writes put") {
  tcp_peer_fixture f;
  const std::uint64_t total = 300 * 28000;
  auto source = test::pattern(total, 7);
  std::vector<std::byte> back(total);
  CHECK(all_ok(f.run(chunked(transfer_op::write, source.data(), f.peer.segment, total, 300))));
  CHECK(all_ok(f.run(chunked(transfer_op::read, back.data(), f.peer.segment, total, 300))));
  CHECK(std::memcmp(back.data(), source.data(), total) == 0);
}

TEST_CASE("tcp lane dropped by the peer mid-transfer: the batch completes on the others"
          * doctest::test_suite("fault")) {
  tcp_peer_fixture f{"[fault]\nenabled = true\ntcp_drop_lane_after_slices = 300\n"};
  const std::uint64_t total = 200000000;
  auto source = test::pattern(total, 3);
  const auto reply = f.run(chunked(transfer_op::write, source.data(), f.peer.segment, total, 5000));
  CHECK(all_ok(reply));
  CHECK(reply.slices_retried > 0);  // the lane did drop, with slices on it
  CHECK(f.peer_checksum(0, total) == crc32c(source.data(), total));
}

TEST_CASE("tcp peer killed mid-transfer: requests fail fast with a named error"
          * doctest::test_suite("fault")) {
  tcp_peer_fixture f{"[fault]\nenabled = true\ntcp_kill_after_slices = 300\n"};
  const std::uint64_t total = 200000000;
  auto source = test::pattern(total, 4);
  const auto reply = f.run(chunked(transfer_op::write, source.data(), f.peer.segment, total, 5000));
  std::size_t failed = 0;
  for (const auto& s : reply.statuses) {
    if (s.ok()) continue;
    ++failed;
    CHECK_MESSAGE((s.error == transfer_error::peer_unreachable ||
                   s.error == transfer_error::lane_closed), to_string(s));
  }
  CHECK(failed > 0);
  CHECK(f.peer.process().finish() == 128 + SIGKILL);
}

// What the server answers on a fresh connection, admitted with the route's ticket, to
// `bytes`: the error of its status frame (none when it sent no frame), and whether it
// then closed the connection.
std::pair<transfer_error, bool> answer_to(const tcp_peer_fixture& f, const void* bytes,
                                          std::size_t size) {
  auto fd = test::admitted_connection(f.peer.data_port, f.route.peer.lane_route,
                                      f.route.peer.lane_secret);
  REQUIRE(send_all(fd.get(), bytes, size));
  ::shutdown(fd.get(), SHUT_WR);  // a truncated frame stays truncated
  frame_bytes reply;
  frame_header header;
  const bool answered = recv_all(fd.get(), reply.data(), reply.size());
  const auto status = answered && decode_frame(reply, header) == transfer_error::none
                        ? header.error
                        : transfer_error::none;
  char more = 0;
  return {status, ::recv(fd.get(), &more, 1, 0) <= 0};  // end of stream, or a reset
}

TEST_CASE("tcp hostile frames are rejected while the server keeps serving"
          * doctest::test_suite("fault")) {
  tcp_peer_fixture f;
  std::vector<std::byte> source = test::pattern(1 << 20, 9);
  const auto good = [&] {
    return all_ok(f.run(chunked(transfer_op::write, source.data(), f.peer.segment, 1 << 20, 16)));
  };
  REQUIRE(good());  // the route's lanes are connected before the attacks
  const std::uint64_t end = 700ull << 20;
  const std::pair<frame_header, transfer_error> attacks[] = {
    {{frame_kind::write, {}, 1, f.peer.segment, end - 10, 100}, transfer_error::out_of_bounds},
    {{frame_kind::read, {}, 2, 99, 0, 100}, transfer_error::unknown_segment},
    {{frame_kind::write, {}, 3, f.peer.segment, 0, 1ull << 40}, transfer_error::length_overflow},
    {{frame_kind::read, {}, 4, f.peer.segment, ~0ull - 5, 100}, transfer_error::length_overflow},
    {{frame_kind::status, {}, 5, f.peer.segment, 0, 100}, transfer_error::bad_frame}};
  for (const auto& [frame, expected] : attacks) {
    const auto bytes = encode_frame(frame);
    CHECK(answer_to(f, bytes.data(), bytes.size()) == std::pair{expected, true});
    CHECK(good());
  }
  const std::vector<std::uint8_t> garbage(frame_header_size, 0xab);  // one header's worth
  CHECK(answer_to(f, garbage.data(), garbage.size()) ==
        std::pair{transfer_error::bad_frame, true});
  CHECK(good());
  const auto whole = encode_frame({frame_kind::write, {}, 6, f.peer.segment, 0, 100});
  CHECK(answer_to(f, whole.data(), 20) == std::pair{transfer_error::none, true});
  CHECK(good());
}

// Without TCP_NODELAY on the owner's side, the last status frame of a group waited
// for the requester's delayed ack: 40 ms a group.
TEST_CASE("tcp sockets of both ends send small frames at once") {
  const auto listener = listen_tcp("127.0.0.1", 0);
  int error = 0;
  const auto requester = connect_tcp("127.0.0.1", local_port(listener.get()), error);
  REQUIRE(requester);
  const auto owner = accept_tcp(listener.get());
  REQUIRE(owner);
  for (const int fd : {requester.get(), owner.get()}) {
    int nodelay = 0;
    socklen_t size = sizeof nodelay;
    REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &size) == 0);
    CHECK(nodelay == 1);
  }
}

// Frames split at any byte, or run together, are served alike: the owner reads the next
// header along with a payload, in whatever pieces it arrives.
TEST_CASE("tcp frames arriving in any pieces are each served and answered") {
  tcp_peer_fixture f;
  const std::uint64_t lengths[] = {1000, 2000, 500, 64};
  for (const std::size_t piece : {std::size_t{7}, std::size_t{41}, std::size_t{1} << 20}) {
    CAPTURE(piece);
    const auto payload = test::pattern(3564, piece);
    std::vector<std::byte> stream;
    std::uint64_t offset = 0;
    for (std::uint64_t i = 0; i < std::size(lengths); ++i) {
      const auto header =
        encode_frame({frame_kind::write, {}, i + 1, f.peer.segment, offset, lengths[i]});
      stream.insert(stream.end(), header.begin(), header.end());
      stream.insert(stream.end(), payload.begin() + offset, payload.begin() + offset + lengths[i]);
      offset += lengths[i];
    }
    auto fd = test::admitted_connection(f.peer.data_port, f.route.peer.lane_route,
                                        f.route.peer.lane_secret);
    for (std::size_t at = 0; at < stream.size(); at += piece)
      REQUIRE(send_all(fd.get(), stream.data() + at, std::min(piece, stream.size() - at)));
    for (std::uint64_t i = 0; i < std::size(lengths); ++i) {
      frame_bytes reply;
      frame_header status;
      REQUIRE(recv_all(fd.get(), reply.data(), reply.size()));
      REQUIRE(decode_frame(reply, status) == transfer_error::none);
      CHECK(status.slice_id == i + 1);
      CHECK(status.error == transfer_error::none);
    }
    CHECK(f.peer_checksum(0, payload.size()) == crc32c(payload.data(), payload.size()));
  }
}

// A checksum runs on the owner's scheduler thread, asked by any peer: one request
// covers a bounded range, and range_checksum chains as many as a range needs.
TEST_CASE("a checksum request over more than its bound is refused, a long range chained") {
  test::networked_system networked;
  auto bytes = test::pattern(checksum_length_max + 4096, 3);
  auto segments = std::make_shared<segment_table>(transfer_identity(networked.system));
  const auto segment = segments->add(bytes.data(), bytes.size()).id;
  auto host = spawn_transport_host(networked.system,
                                   {segments, std::make_shared<lane_admission>(), 0, {}});
  caf::scoped_actor self{networked.system};
  caf::error refused;
  self->request(host, caf::infinite, checksum_atom_v, segment, std::uint64_t{0},
                std::uint64_t{checksum_length_max + 1}, std::uint32_t{0})
    .receive([](std::uint32_t) {}, [&](caf::error& err) { refused = err; });
  CHECK(refused == caf::sec::invalid_argument);
  CHECK(range_checksum(networked.system, host, segment, 0, bytes.size()) ==
        crc32c(bytes.data(), bytes.size()));
  stop_exit_guard(caf::actor_cast<caf::actor>(host));
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
