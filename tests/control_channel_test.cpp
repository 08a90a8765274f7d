// The control channel's connects (runtime/control_channel.hpp) against CAF 0.17.6's
// heartbeat: a connect whose peer answers the handshake after a tick is dropped by CAF
// as connection_timeout, and connect_transfer_host makes it again.
#include <doctest/doctest.h>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/control_channel.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "tests/transfer_fixtures.hpp"

namespace spillway {
namespace {

// A relay on loopback to port `to`: its first connection is held open and silent, so
// the connecting side's handshake waits past a heartbeat tick; each later one is pumped
// both ways to `to`.
class stalling_relay {
public:
  explicit stalling_relay(std::uint16_t to)
      : to_(to), listener_(listen_tcp("127.0.0.1", 0)), port_(local_port(listener_.get())) {
    accepting_ = std::thread{[this] { accept_all(); }};
  }
  ~stalling_relay() {
    ::shutdown(listener_.get(), SHUT_RDWR);  // ends accept
    accepting_.join();
    for (auto& fd : held_) ::shutdown(fd.get(), SHUT_RDWR);  // ends the pumps
    for (auto& t : pumps_) t.join();
  }

  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

private:
  void accept_all() {
    for (;;) {
      auto in = accept_tcp(listener_.get());
      if (!in) return;
      if (accepted_++ == 0) {
        held_.push_back(std::move(in));
        continue;
      }
      int error = 0;
      auto out = connect_tcp("127.0.0.1", to_, error);
      REQUIRE_MESSAGE(out, std::strerror(error));
      pumps_.emplace_back(pump, in.get(), out.get());
      pumps_.emplace_back(pump, out.get(), in.get());
      held_.push_back(std::move(in));
      held_.push_back(std::move(out));
    }
  }

  static void pump(int from, int to) {
    std::vector<char> buffer(64 << 10);
    for (;;) {
      const auto got = ::recv(from, buffer.data(), buffer.size(), 0);
      if (got <= 0 || !send_all(to, buffer.data(), static_cast<std::size_t>(got))) break;
    }
    ::shutdown(to, SHUT_WR);
  }

  std::uint16_t to_;
  unique_fd listener_;
  std::uint16_t port_;
  std::atomic<int> accepted_{0};
  std::vector<unique_fd> held_;  // touched by accept_all until it is joined
  std::vector<std::thread> pumps_;
  std::thread accepting_;
};

TEST_SUITE("control-channel") {

TEST_CASE("a connect whose handshake comes after a heartbeat tick is made again") {
  test::transfer_peer_child peer{"", "1MiB", {}};
  stalling_relay relay{peer.control_port};
  test::networked_system asker;
  const auto host = connect_transfer_host(asker.system, "127.0.0.1", relay.port());
  REQUIRE_MESSAGE(host, (host ? "" : asker.system.render(host.error())));
  // The first connection never had a handshake: CAF dropped it at a tick, within the
  // heartbeat interval (1 s), and the second one reached the transfer host.
  CHECK(relay.accepted() == 2);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
