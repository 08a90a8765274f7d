// The owner's tcp listener: accepts lanes and serves each on its own thread (lanes
// are few: transfer.tcp_lanes per peer). Stopping shuts every socket down and joins.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/net/segment.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace spillway {

// Faults a server injects on purpose, counted in slices served over all its lanes;
// 0 = never (the node fills these from [fault] only when fault.enabled).
struct tcp_server_faults {
  std::uint64_t drop_lane_after_slices = 0;  // shut down the lane that served the Nth
  std::uint64_t kill_after_slices = 0;       // SIGKILL the process after the Nth
};

class tcp_server {
public:
  // Listens on host:port (0 = a free port); throws std::system_error.
  tcp_server(std::shared_ptr<const segment_table> segments, const std::string& host,
             std::uint16_t port, const tcp_server_faults& faults);
  ~tcp_server();
  tcp_server(const tcp_server&) = delete;
  tcp_server& operator=(const tcp_server&) = delete;

  std::uint16_t port() const { return port_; }
  // Accepts that failed for want of a descriptor or of memory (EMFILE, ENFILE, ...).
  std::uint64_t accept_failures() const { return accept_failures_; }
  // Connections closed on a frame the server refused (bad frame, segment, range).
  std::uint64_t refused_frames() const { return refused_frames_; }
  // Connections dropped on purpose (tcp_server_faults::drop_lane_after_slices).
  std::uint64_t dropped_lanes() const { return dropped_lanes_; }

private:
  struct session {
    unique_fd fd;  // empty once its thread has closed it
    std::thread thread;
  };

  void accept_loop();
  void serve(session& s);
  bool after_slice();

  std::shared_ptr<const segment_table> segments_;
  tcp_server_faults faults_;
  unique_fd listener_;
  std::uint16_t port_ = 0;
  std::atomic<std::uint64_t> served_{0};
  std::atomic<std::uint64_t> accept_failures_{0};
  std::atomic<std::uint64_t> refused_frames_{0};
  std::atomic<std::uint64_t> dropped_lanes_{0};
  std::mutex mutex_;  // guards sessions_, each session's fd and stopping_
  std::condition_variable woken_;  // stopping_ set: ends the acceptor's pause
  std::list<session> sessions_;
  bool stopping_ = false;
  std::thread acceptor_;
};

}  // namespace spillway
