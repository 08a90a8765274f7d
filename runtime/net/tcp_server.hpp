// The owner's tcp listener: accepts lanes and serves each on its own thread (lanes
// are few: transfer.tcp_lanes per peer), within caps on lanes in all and per peer
// address. A lane is served only once its hello proved it holds a ticket
// (lane_admission.hpp). Stopping shuts every socket down and joins.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/net/lane_admission.hpp"
#include "runtime/net/segment.hpp"
#include "runtime/net/tcp_session.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace spillway {

// Faults a server injects on purpose, counted in slices served over all its lanes;
// 0 = never (the node fills these from [fault] only when fault.enabled).
struct tcp_server_faults {
  std::uint64_t drop_lane_after_slices = 0;  // shut down the lane that served the Nth
  std::uint64_t kill_after_slices = 0;       // SIGKILL the process after the Nth
};

// What one server may hold ([transfer] max_lanes, max_lanes_per_peer and the timeouts).
struct tcp_server_limits {
  std::uint64_t max_lanes = 256;          // connections at once, admitted or not
  std::uint64_t max_lanes_per_peer = 64;  // of them from one address
  tcp_session_limits session;
};

class tcp_server {
public:
  // Listens on host:port (0 = a free port); throws std::system_error.
  tcp_server(std::shared_ptr<const segment_table> segments,
             std::shared_ptr<const lane_admission> admission, const std::string& host,
             std::uint16_t port, const tcp_server_faults& faults,
             const tcp_server_limits& limits = {});
  ~tcp_server();
  tcp_server(const tcp_server&) = delete;
  tcp_server& operator=(const tcp_server&) = delete;

  std::uint16_t port() const { return port_; }
  // Accepts that failed for want of a descriptor or of memory (EMFILE, ENFILE, ...),
  // and connections refused because no thread could be made for them.
  std::uint64_t accept_failures() const { return accept_failures_; }
  // Connections closed on a frame the server refused (bad frame, segment, range,
  // not exported, read-only).
  std::uint64_t refused_frames() const { return refused_frames_; }
  // Connections dropped on purpose (tcp_server_faults::drop_lane_after_slices).
  std::uint64_t dropped_lanes() const { return dropped_lanes_; }
  // Connections closed before serving anything: no hello, or a wrong ticket.
  std::uint64_t refused_lanes() const { return refused_lanes_; }
  // Connections refused at accept: max_lanes or max_lanes_per_peer reached.
  std::uint64_t capped_lanes() const { return capped_lanes_; }
  // Connections closed idle (lane_idle_timeout_ms) or mid-frame (frame_timeout_ms).
  std::uint64_t timed_out_lanes() const { return timed_out_lanes_; }

private:
  struct session {
    unique_fd fd;  // empty once its thread has closed it
    std::string address;
    std::thread thread;
  };

  void accept_loop();
  bool admit_connection(unique_fd fd, const std::string& address);  // caller holds mutex_
  void serve(session& s);
  void report(const session& s, const session_result& result);
  bool after_slice();

  std::shared_ptr<const segment_table> segments_;
  std::shared_ptr<const lane_admission> admission_;
  tcp_server_faults faults_;
  tcp_server_limits limits_;
  unique_fd listener_;
  std::uint16_t port_ = 0;
  log_budget log_budget_{20, std::chrono::seconds{1}};
  std::atomic<std::uint64_t> served_{0};
  std::atomic<std::uint64_t> accept_failures_{0};
  std::atomic<std::uint64_t> refused_frames_{0};
  std::atomic<std::uint64_t> dropped_lanes_{0};
  std::atomic<std::uint64_t> refused_lanes_{0};
  std::atomic<std::uint64_t> capped_lanes_{0};
  std::atomic<std::uint64_t> timed_out_lanes_{0};
  std::mutex mutex_;  // guards sessions_, each session's fd, lanes_of_ and stopping_
  std::condition_variable woken_;  // stopping_ set: ends the acceptor's pause
  std::list<session> sessions_;
  std::map<std::string, std::uint64_t> lanes_of_;  // open sessions by peer address
  std::uint64_t open_ = 0;                         // open sessions in all
  bool stopping_ = false;
  std::thread acceptor_;
};

}  // namespace spillway
