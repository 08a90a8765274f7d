// The requester's side of one tcp lane: a connection to a segment owner that moves a
// group of slices at a time, pipelined (frames go out while status frames come back),
// with partial sends and receives resumed where they stopped. A dropped connection
// fails the slices still in flight (lane_closed) and is made again on the next group;
// one that cannot be made fails the group at once (peer_unreachable). Every connection
// opens with a hello carrying the route's ticket, which the owner checks first.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/net/lane_admission.hpp"
#include "runtime/net/slice_pool.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace spillway {

class tcp_lane {
public:
  // A slice fails with `timeout` when the lane makes no progress for `slice_timeout`.
  tcp_lane(std::string host, std::uint16_t port, std::chrono::milliseconds slice_timeout,
           lane_ticket ticket);

  // Moves every slice of `group` and sets each one's status. Never throws.
  void run(slice_group& group);

private:
  struct exchange;  // one group's progress in both directions

  bool push(exchange& x);                  // sends until the socket is full
  bool pull(exchange& x);                  // receives until the socket is empty
  bool take_status(exchange& x, const frame_bytes& bytes);
  void fail_rest(exchange& x, transfer_status status);

  std::string host_;
  std::uint16_t port_;
  std::chrono::milliseconds slice_timeout_;
  lane_ticket ticket_;
  unique_fd fd_;
  std::uint64_t next_slice_id_ = 1;
  std::array<std::byte, 64 * frame_header_size> inbox_;  // status frames read ahead
  std::size_t inbox_begin_ = 0;
  std::size_t inbox_end_ = 0;
};

}  // namespace spillway
