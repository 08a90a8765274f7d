// A transfer's future is ready only once no lane can touch its memory: the caller may
// free the buffer the moment it has the answer. The peer here is this process's own
// stand-in, a transfer host published for descriptors and a data server that stops in
// the middle of a READ's payload until the test lets it go on, so a lane is certainly
// inside its receive when the node stops.
#include <doctest/doctest.h>

#include <sanitizer/asan_interface.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <caf/io/middleman.hpp>
#include <caf/send.hpp>

#include "actors/exit_guard.hpp"
#include "actors/transport_host.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tests/transfer_fixtures.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t read_bytes = 1 << 20;  // 16 slices of 64 KiB
constexpr auto test_limit = std::chrono::seconds(20);
constexpr auto poison = std::byte{0xa5};

// Serves READs from `bytes` on one connection, but stops halfway through the first
// slice's payload: `stalled` is set then, and the rest follows once `release` is.
class stalling_peer {
public:
  stalling_peer() : listener_(listen_tcp("127.0.0.1", 0)) {
    // The node under test: whoever asks through the host.
    const auto segment =
      segments_->add(bytes_.data(), bytes_.size(), segment_export::to_admitted_peers());
    segment_id = segment.id;
    host_ = spawn_transport_host(networked_.system, {segments_, std::make_shared<lane_admission>(),
                                                     local_port(listener_.get()), {}});
    auto port = networked_.system.middleman().publish(host_, 0, "127.0.0.1");
    REQUIRE(port);
    control_port = *port;
    server_ = std::thread([this] { serve(); });
  }

  ~stalling_peer() {
    let_go();
    ::shutdown(listener_.get(), SHUT_RDWR);  // wakes an accept no lane came to
    server_.join();
    stop_exit_guard(caf::actor_cast<caf::actor>(host_));
  }

  std::uint16_t control_port = 0;
  std::uint64_t segment_id = 0;
  std::promise<void> stalled;

  // Lets the data server send the rest of the stalled READ (and all after it).
  void let_go() {
    std::call_once(released_, [this] { release_.set_value(); });
  }

private:
  void serve() {
    auto fd = accept_tcp(listener_.get());
    auto go_on = release_.get_future();
    bool first = true;
    frame_bytes bytes;
    frame_header h;
    std::byte secret[lane_secret_size];  // the lane's hello, taken as it comes
    if (!fd || !recv_all(fd.get(), bytes.data(), bytes.size()) ||
        !recv_all(fd.get(), secret, sizeof secret))
      return;
    while (recv_all(fd.get(), bytes.data(), bytes.size()) &&
           decode_frame(bytes, h) == transfer_error::none && h.kind == frame_kind::read) {
      const auto status = encode_frame({frame_kind::status, transfer_error::none, h.slice_id,
                                        0, 0, h.length});
      const auto* payload = bytes_.data() + h.offset;
      const auto half = first ? h.length / 2 : 0;
      if (!send_all(fd.get(), status.data(), status.size()) ||
          !send_all(fd.get(), payload, half))
        return;
      if (first) {
        stalled.set_value();
        if (go_on.wait_for(test_limit) != std::future_status::ready) return;
        first = false;
      }
      if (!send_all(fd.get(), payload + half, h.length - half)) return;
    }
  }

  std::vector<std::byte> bytes_ = test::pattern(read_bytes, 7);
  std::shared_ptr<segment_table> segments_ = std::make_shared<segment_table>();
  unique_fd listener_;
  test::networked_system networked_;
  transfer_host_actor host_;
  std::promise<void> release_;
  std::once_flag released_;
  std::thread server_;
};

node_config stopping_node(const test::temp_dir& dir) {
  auto config = test::private_node(dir.path());
  config.node.log_level = "warn";
  config.read.readers = 1;
  config.transfer.transport = "tcp";
  config.transfer.listen = "127.0.0.1:0";
  config.transfer.slicers = 1;
  config.transfer.tcp_lanes = 1;
  // How long the stopped lane waits on the peer; it also bounds connect_peer's describe,
  // which under TSan took over 1 s (CI).
  config.transfer.slice_timeout_ms = 3000;
  return config;
}

TEST_SUITE("transfer-stop") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "a node stopped mid-READ answers only once no lane can write the buffer") {
  stalling_peer peer;
  test::temp_dir dir;
  node client{stopping_node(dir)};
  const auto route = client.connect_peer("127.0.0.1", peer.control_port);
  std::vector<std::byte> memory(read_bytes);
  auto answer = client.transfer(
    route, {{transfer_op::read, memory.data(), peer.segment_id, 0, read_bytes}});
  REQUIRE(peer.stalled.get_future().wait_for(test_limit) == std::future_status::ready);

  // What a caller does with the answer: frees the buffer (here: poisons it, for ASan
  // too), and only then does the peer send the rest of what the lane asked for.
  std::thread caller([&] {
    answer.wait();
    std::memset(memory.data(), int(poison), memory.size());
    ASAN_POISON_MEMORY_REGION(memory.data(), memory.size());
    peer.let_go();
  });
  client.stop();  // returns once every lane's thread is done
  caller.join();
  ASAN_UNPOISON_MEMORY_REGION(memory.data(), memory.size());

  CHECK(std::all_of(memory.begin(), memory.end(), [](std::byte b) { return b == poison; }));
  const auto statuses = answer.get();
  REQUIRE(statuses.size() == 1);
  CHECK_FALSE(statuses[0].ok());  // the stop cut the READ short
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
