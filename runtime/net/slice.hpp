// What a transfer is made of: a request (what the caller asks to move), the slice (the
// unit a transport moves) and the status each request ends with. Plain data, free of
// CAF: the embedding API hands these to callers. Sizes and offsets are bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace spillway {

enum class transfer_op : std::uint8_t {
  write,  // local memory -> the peer's segment
  read,   // the peer's segment -> local memory
};

enum class transfer_error : std::uint8_t {
  none,
  unknown_segment,   // no segment registered under that id
  out_of_bounds,     // offset + length runs past the segment's end
  length_overflow,   // offset + length wraps, or a slice longer than any may be
  bad_frame,         // the peer sent bytes that are not a frame of our protocol
  lane_closed,       // the connection dropped with the slice in flight
  peer_unreachable,  // no connection to the peer could be made
  timeout,           // the slice made no progress for transfer.slice_timeout_ms
  unavailable,       // the engine is stopped, or every lane to the peer is gone
  remote_access,     // rdma: the peer's memory region refused the access (rkey, range)
  local_access,      // rdma: the local memory is in no region registered on this node
  not_exported,      // the segment is not exported to this peer (or was unregistered)
  read_only,         // a write to a segment exported read-only
};
inline constexpr std::size_t transfer_error_count = 13;

// "ok", "unknown_segment", ...: the status' name without its errno.
const char* name_of(transfer_error error);

// Errors about the request itself are final; the others may pass on another lane.
constexpr bool retryable(transfer_error error) {
  return error == transfer_error::lane_closed || error == transfer_error::peer_unreachable ||
         error == transfer_error::timeout || error == transfer_error::unavailable;
}

struct transfer_status {
  transfer_error error = transfer_error::none;
  std::int32_t sys_errno = 0;  // lane_closed, peer_unreachable: the errno behind it

  bool ok() const { return error == transfer_error::none; }
  bool operator==(const transfer_status&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_status& x) {
  return f(x.error, x.sys_errno);
}

// "ok", "out_of_bounds", "lane_closed(ECONNRESET)", ...
std::string to_string(const transfer_status& status);

// Moves `length` bytes between `local` (this process) and `offset` in `segment`.
struct transfer_request {
  transfer_op op = transfer_op::write;
  void* local = nullptr;
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// One piece of a request as a transport moves it; `request` says whose it is (in the
// batch of its group) and the transport fills in `status`. Slices live in a slicer's
// pool and are reused.
struct slice {
  transfer_op op = transfer_op::write;
  std::uint8_t attempts = 0;  // sends so far, the first included
  transfer_status status;
  std::uint32_t length = 0;   // at most slice_size + fragment_limit (<= 128 MiB)
  std::uint32_t request = 0;  // index in its batch
  std::byte* local = nullptr;
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
};

using transfer_clock = std::chrono::steady_clock;

}  // namespace spillway
