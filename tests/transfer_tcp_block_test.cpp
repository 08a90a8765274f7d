// The tcp blocks (runtime/net) under a process's own limits: a lane whose poll fails
// says why, a server out of descriptors waits instead of spinning. Each such case
// lowers RLIMIT_NOFILE in a forked child, where nothing else of the test runs, and the
// child's exit code is its verdict. And the server counts the connections it refuses
// or drops, which /metrics shows.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/net/slice_pool.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_lane.hpp"
#include "runtime/net/tcp_server.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace spillway {
namespace {

constexpr unsigned child_limit_s = 20;  // SIGALRM ends a child that hangs

// Runs `verdict` in a forked child; its return value (0-255) or -1 when it died.
int in_child(const std::function<int()>& verdict) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(child_limit_s);
    ::_exit(verdict());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void limit_descriptors(rlim_t count) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = count;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

struct served_segment {
  std::vector<std::byte> memory = std::vector<std::byte>(4096);
  std::shared_ptr<segment_table> segments = std::make_shared<segment_table>("requester");
  std::uint64_t id = segments->add(memory.data(), memory.size()).id;
  std::shared_ptr<lane_admission> admission = std::make_shared<lane_admission>();
  lane_ticket ticket = admission->issue("requester");

  // A raw connection's first bytes: the hello a lane sends.
  bool send_hello(int fd) const {
    const auto header =
      encode_frame({frame_kind::hello, {}, 0, ticket.route, 0, ticket.secret.size()});
    return send_all(fd, header.data(), header.size()) &&
           send_all(fd, ticket.secret.data(), ticket.secret.size());
  }
};

// One write of `length` bytes to the segment through `lane`: the slice's status.
transfer_status write_once(tcp_lane& lane, std::uint64_t segment, std::uint32_t length = 16) {
  std::vector<std::byte> bytes(length);
  slice_pool pool{1, 1};
  auto* group = pool.take();
  auto& s = group->append();
  s = {transfer_op::write, 1, {}, length, 0, bytes.data(), segment, 0};
  lane.run(*group);
  return s.status;
}

TEST_SUITE("transfer-tcp") {

// poll() fails with EINVAL when its one descriptor is over RLIMIT_NOFILE (0 here).
TEST_CASE("a lane whose poll fails reports poll's errno") {
  served_segment owner;
  tcp_server server{owner.segments, owner.admission, "127.0.0.1", 0, {}};
  const int lane_errno = in_child([&] {
    tcp_lane lane{"127.0.0.1", server.port(), std::chrono::seconds(5), owner.ticket};
    if (!write_once(lane, owner.id).ok()) return 255;  // connected and moved
    limit_descriptors(0);
    const auto failed = write_once(lane, owner.id);
    return failed.error == transfer_error::lane_closed ? failed.sys_errno : 254;
  });
  CHECK(lane_errno == EINVAL);
}

// A connection the server cannot accept stays queued, so accept() fails again at
// once: without a pause the acceptor spins a core for as long as descriptors are short.
// The child's verdict: accept failures in a 300 ms window (few when it waits between
// tries), 200 when accept never failed, 201 when the connection was not served once
// descriptors were back.
TEST_CASE("a tcp server out of descriptors waits between accepts and serves once it can") {
  const int verdict = in_child([] {
    served_segment owner;
    tcp_server server{owner.segments, owner.admission, "127.0.0.1", 0, {}};
    unique_fd client{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    limit_descriptors(static_cast<rlim_t>(lowest_free));  // no descriptor for accept
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(server.port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      return 202;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.accept_failures() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (server.accept_failures() == 0) return 200;
    const auto before = server.accept_failures();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the window measured
    const auto in_window = server.accept_failures() - before;
    limit_descriptors(lowest_free + 64);
    const timeval patience{10, 0};
    ::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    const std::byte payload[16]{};
    const auto header = encode_frame({frame_kind::write, {}, 1, owner.id, 0, sizeof payload});
    frame_bytes status;
    if (!owner.send_hello(client.get()) || !send_all(client.get(), header.data(), header.size()) ||
        !send_all(client.get(), payload, sizeof payload) ||
        !recv_all(client.get(), status.data(), status.size()))
      return 201;
    return static_cast<int>(std::min<std::uint64_t>(in_window, 199));
  });
  CHECK(verdict <= 10);
}

// The server closes a connection only after counting why, so a peer that saw the
// close reads the count without waiting.
TEST_CASE("a tcp server counts the connections it closed on a refused frame or a fault") {
  served_segment owner;
  tcp_server server{owner.segments, owner.admission, "127.0.0.1", 0,
                    {.drop_lane_after_slices = 2}};
  int error = 0;
  auto hostile = connect_tcp("127.0.0.1", server.port(), error);
  REQUIRE(hostile);
  REQUIRE(owner.send_hello(hostile.get()));
  const auto unknown = encode_frame({frame_kind::read, {}, 1, owner.id + 1, 0, 16});
  REQUIRE(send_all(hostile.get(), unknown.data(), unknown.size()));
  frame_bytes status;
  CHECK(recv_all(hostile.get(), status.data(), status.size()));
  char more = 0;
  CHECK(::recv(hostile.get(), &more, 1, 0) == 0);
  CHECK(server.refused_frames() == 1);
  CHECK(server.dropped_lanes() == 0);

  tcp_lane lane{"127.0.0.1", server.port(), std::chrono::seconds(5), owner.ticket};
  CHECK(write_once(lane, owner.id).ok());
  CHECK(write_once(lane, owner.id).error == transfer_error::lane_closed);  // served, dropped
  CHECK(server.dropped_lanes() == 1);
  CHECK(server.refused_frames() == 1);
}

// The owner refuses a write after its header and closes the lane without reading the
// payload, as tcp_session does: with bytes of the 16 MiB unread (counted with FIONREAD
// just before), the kernel answers that close with a reset, so the lane's next send
// fails. The refusal's status came first and names what went wrong.
TEST_CASE("a refusal that resets the lane mid-payload still reaches the slice") {
  served_segment owner;
  int unread = 0;
  auto listener = listen_tcp("127.0.0.1", 0);
  REQUIRE(listener);
  std::thread refusing{[&] {
    auto fd = accept_tcp(listener.get());
    std::array<std::byte, frame_header_size + lane_secret_size> hello;
    frame_bytes header;
    if (!fd || !recv_all(fd.get(), hello.data(), hello.size()) ||
        !recv_all(fd.get(), header.data(), header.size()))
      return;
    frame_header h;
    decode_frame(header, h);
    const auto status =
      encode_frame({frame_kind::status, transfer_error::not_exported, h.slice_id, 0, 0, 0});
    send_all(fd.get(), status.data(), status.size());
    ::ioctl(fd.get(), FIONREAD, &unread);
  }};  // closes with the payload unread
  tcp_lane lane{"127.0.0.1", local_port(listener.get()), std::chrono::seconds(20), owner.ticket};
  const auto refused = write_once(lane, owner.id, 16 << 20);
  refusing.join();
  CHECK(unread > 0);
  CHECK(refused.error == transfer_error::not_exported);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
