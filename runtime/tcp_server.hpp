// The owner's tcp listener: accepts lanes and serves each on its own thread (lanes
// are few: transfer.tcp_lanes per peer). Stopping shuts every socket down and joins.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.hpp"
#include "runtime/segment.hpp"
#include "runtime/tcp_socket.hpp"

namespace spillway {

class tcp_server {
public:
  // Listens on host:port (0 = a free port); throws std::system_error. `faults`: the
  // [fault] section, whose tcp_* keys count slices served over all lanes.
  tcp_server(std::shared_ptr<const segment_table> segments, const std::string& host,
             std::uint16_t port, const fault_section& faults);
  ~tcp_server();
  tcp_server(const tcp_server&) = delete;
  tcp_server& operator=(const tcp_server&) = delete;

  std::uint16_t port() const { return port_; }

private:
  struct session {
    unique_fd fd;  // empty once its thread has closed it
    std::thread thread;
  };

  void accept_loop();
  void serve(session& s);
  bool after_slice();

  std::shared_ptr<const segment_table> segments_;
  std::uint64_t drop_lane_after_ = 0;  // 0 = never, as when [fault] is not enabled
  std::uint64_t kill_after_ = 0;
  unique_fd listener_;
  std::uint16_t port_ = 0;
  std::atomic<std::uint64_t> served_{0};
  std::mutex mutex_;  // guards sessions_ and each session's fd
  std::list<session> sessions_;
  bool stopping_ = false;
  std::thread acceptor_;
};

}  // namespace spillway
