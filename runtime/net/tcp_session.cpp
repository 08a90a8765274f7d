// Per slice, the owner makes as few system calls as it can: a write's payload and the
// next frame's header come in with one readv where both have arrived, and status frames
// of writes are gathered and sent together once the lane has nothing more queued (that
// readv came back short), so a pipelined group costs a few sends, not one per slice.
// Reads answer at once, since their data follows the status.
#include "runtime/net/tcp_session.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace spillway {
namespace {

constexpr std::size_t statuses_max = 64;  // gathered before a send regardless

class status_writer {
public:
  explicit status_writer(int fd) : fd_(fd) { pending_.reserve(statuses_max); }

  void add(std::uint64_t slice_id, transfer_error error, std::uint64_t length = 0) {
    pending_.push_back(encode_frame({frame_kind::status, error, slice_id, 0, 0, length}));
  }

  // Sends when the lane has nothing more for us to read, or enough have gathered.
  bool flush_unless_busy(bool more_queued) {
    if (more_queued && pending_.size() < statuses_max) return true;
    return flush();
  }

  bool flush() {
    const bool sent = pending_.empty() ||
                      send_all(fd_, pending_.data(), pending_.size() * frame_header_size);
    pending_.clear();
    return sent;
  }

private:
  int fd_;
  std::vector<frame_bytes> pending_;
};

// The owner's checks, all before memory is touched: a frame of ours, a request kind,
// a known segment, a range inside it.
transfer_error check_frame(const frame_bytes& bytes, const segment_table& segments,
                           frame_header& header, std::byte*& where) {
  auto error = decode_frame(bytes, header);
  if (error == transfer_error::none && header.kind == frame_kind::status)
    error = transfer_error::bad_frame;
  if (error != transfer_error::none) return error;
  return segments.resolve(header.segment, header.offset, header.length, where);
}

// Reads a write's `size` payload bytes into `to` and, in the same calls, as much of the
// next frame's header as has arrived behind them; `next_read` counts those header bytes.
// False at end of stream (errno 0) or on an error.
bool recv_payload(int fd, std::byte* to, std::size_t size, frame_bytes& next,
                  std::size_t& next_read) {
  next_read = 0;
  while (size > 0) {
    iovec parts[2] = {{to, size}, {next.data(), next.size()}};
    const ssize_t n = ::readv(fd, parts, 2);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = 0;
    if (n <= 0) return false;
    const auto got = static_cast<std::size_t>(n);
    const auto payload = std::min(got, size);
    next_read = got - payload;
    to += payload;
    size -= payload;
  }
  return true;
}

}  // namespace

transfer_error serve_tcp_session(int fd, const segment_table& segments,
                                 const std::function<bool()>& after_slice) {
  status_writer statuses{fd};
  frame_bytes bytes;
  std::size_t read_ahead = 0;  // bytes of the next header that came with a payload
  for (;;) {
    // Closed, reset or truncated: done.
    if (!recv_all(fd, bytes.data() + read_ahead, bytes.size() - read_ahead)) break;
    read_ahead = 0;
    frame_header header;
    std::byte* where = nullptr;
    const auto error = check_frame(bytes, segments, header, where);
    if (error != transfer_error::none) {
      statuses.add(header.slice_id, error);
      statuses.flush();
      return error;
    }
    if (header.kind == frame_kind::write) {
      if (!recv_payload(fd, where, header.length, bytes, read_ahead)) break;
      statuses.add(header.slice_id, transfer_error::none);
    } else {
      statuses.add(header.slice_id, transfer_error::none, header.length);
      if (!statuses.flush() || !send_all(fd, where, header.length)) return transfer_error::none;
    }
    // A readv that filled the next header too may have left more queued behind it.
    const bool busy = read_ahead == bytes.size();
    if (!after_slice() || !statuses.flush_unless_busy(busy)) return transfer_error::none;
  }
  statuses.flush();
  return transfer_error::none;
}

}  // namespace spillway
