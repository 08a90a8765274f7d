// Per slice, the owner makes as few system calls as it can: a write's payload and the
// next frame's header come in with one recvmsg where both have arrived, and status
// frames of writes are gathered and sent together once the lane has nothing more queued
// (that recvmsg came back short), so a pipelined group costs a few sends, not one per
// slice. Reads answer at once, since their data follows the status. A receive polls
// only when the socket is empty, so the timeouts cost nothing while bytes flow.
#include "runtime/net/tcp_session.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <vector>

#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace spillway {
namespace {

using session_clock = std::chrono::steady_clock;

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

enum class got { all, closed, timed_out };

// Waits until `fd` is readable or `deadline` passes.
got wait_readable(int fd, session_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - session_clock::now());
    if (left.count() <= 0) return got::timed_out;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
    if (ready > 0) return got::all;
    if (ready < 0 && errno != EINTR) return got::closed;
  }
}

// Receives into `parts` until the first `need` bytes are in, by `deadline`; `done` counts
// every byte received (it may pass `need` when the last part takes more).
got recv_by(int fd, iovec* parts, int count, std::size_t need, std::size_t& done,
            session_clock::time_point deadline) {
  done = 0;
  std::array<iovec, 2> left{};
  while (done < need) {
    // The parts from `done` on.
    std::size_t skip = done;
    int n_left = 0;
    for (int i = 0; i < count; ++i) {
      if (skip >= parts[i].iov_len) {
        skip -= parts[i].iov_len;
        continue;
      }
      left[n_left++] = {static_cast<std::byte*>(parts[i].iov_base) + skip,
                        parts[i].iov_len - skip};
      skip = 0;
    }
    msghdr message{};
    message.msg_iov = left.data();
    message.msg_iovlen = static_cast<std::size_t>(n_left);
    const ssize_t n = ::recvmsg(fd, &message, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return got::closed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return got::closed;
    if (const auto w = wait_readable(fd, deadline); w != got::all) return w;
  }
  return got::all;
}

got recv_exact(int fd, void* to, std::size_t size, session_clock::time_point deadline) {
  iovec part{to, size};
  std::size_t done = 0;
  return recv_by(fd, &part, 1, size, done, deadline);
}

session_end ended_by(got g) {
  return g == got::timed_out ? session_end::frame_timeout : session_end::closed;
}

// The lane's first frame: a hello whose ticket the admission table knows. The peer it
// names, or nothing and `reason` set.
std::optional<std::string> admit(int fd, const lane_admission& admission,
                                 session_clock::time_point deadline, const char*& reason) {
  frame_bytes bytes;
  auto g = recv_exact(fd, bytes.data(), bytes.size(), deadline);
  frame_header h;
  if (g == got::all && (decode_frame(bytes, h) != transfer_error::none ||
                        h.kind != frame_kind::hello || h.length != lane_secret_size)) {
    reason = "first frame is not a hello";
    return {};
  }
  std::array<std::byte, lane_secret_size> secret;
  if (g == got::all) g = recv_exact(fd, secret.data(), secret.size(), deadline);
  if (g == got::timed_out) reason = "no hello within transfer.frame_timeout_ms";
  if (g == got::closed) reason = "closed before its hello";
  if (g != got::all) return {};
  auto peer = admission.admit(h.segment, secret.data(), secret.size());
  if (!peer) reason = "wrong ticket";
  return peer;
}

// The owner's checks, all before memory is touched: a frame of ours, a request kind,
// a segment exported to this peer, writable for a write, a range inside it.
transfer_error check_frame(const frame_bytes& bytes, const segment_table& segments,
                           const std::string& peer, frame_header& header, std::byte*& where,
                           segment_use& use) {
  auto error = decode_frame(bytes, header);
  if (error == transfer_error::none &&
      header.kind != frame_kind::write && header.kind != frame_kind::read)
    error = transfer_error::bad_frame;
  if (error != transfer_error::none) return error;
  const auto op = header.kind == frame_kind::write ? transfer_op::write : transfer_op::read;
  return segments.resolve(header.segment, header.offset, header.length, peer, true, op, where,
                          use);
}

}  // namespace

const char* name_of(session_end end) {
  switch (end) {
    case session_end::closed: return "closed";
    case session_end::stopped: return "stopped";
    case session_end::refused_frame: return "refused_frame";
    case session_end::not_admitted: return "not_admitted";
    case session_end::idle_timeout: return "idle_timeout";
    case session_end::frame_timeout: return "frame_timeout";
  }
  return "unknown";
}

session_result serve_tcp_session(int fd, const segment_table& segments,
                                 const lane_admission& admission,
                                 const tcp_session_limits& limits,
                                 const std::function<bool()>& after_slice,
                                 const std::function<void(transfer_error)>& refusing) {
  session_result result;
  // The hello is one frame: it must arrive whole within frame_timeout of the connect.
  auto peer = admit(fd, admission, session_clock::now() + limits.frame_timeout, result.reason);
  if (!peer) {
    result.end = session_end::not_admitted;
    return result;
  }
  result.peer = std::move(*peer);
  status_writer statuses{fd};
  frame_bytes bytes;
  std::size_t read_ahead = 0;  // bytes of the next header that came with a payload
  for (;;) {
    if (read_ahead == 0) {  // idle until a frame begins
      if (!statuses.flush()) return result;
      const auto w = wait_readable(fd, session_clock::now() + limits.idle_timeout);
      if (w != got::all) {
        result.end = w == got::timed_out ? session_end::idle_timeout : session_end::closed;
        return result;
      }
    }
    const auto deadline = session_clock::now() + limits.frame_timeout;
    if (const auto g = recv_exact(fd, bytes.data() + read_ahead, bytes.size() - read_ahead,
                                  deadline);
        g != got::all) {
      result.end = ended_by(g);
      if (g == got::closed && read_ahead == 0) result.end = session_end::closed;
      return result;
    }
    read_ahead = 0;
    frame_header header;
    std::byte* where = nullptr;
    segment_use use;
    const auto error = check_frame(bytes, segments, result.peer, header, where, use);
    if (error != transfer_error::none) {
      if (refusing) refusing(error);
      statuses.add(header.slice_id, error);
      statuses.flush();
      result.end = session_end::refused_frame;
      result.error = error;
      return result;
    }
    if (header.kind == frame_kind::write) {
      // The payload, and as much of the next header as came behind it.
      iovec parts[2] = {{where, header.length}, {bytes.data(), bytes.size()}};
      std::size_t done = 0;
      if (const auto g = recv_by(fd, parts, 2, header.length, done, deadline); g != got::all) {
        result.end = ended_by(g);
        return result;
      }
      read_ahead = done - header.length;
      statuses.add(header.slice_id, transfer_error::none);
    } else {
      statuses.add(header.slice_id, transfer_error::none, header.length);
      if (!statuses.flush() || !send_all(fd, where, header.length)) return result;
    }
    use.release();
    // A receive that filled the next header too may have left more queued behind it.
    const bool busy = read_ahead == bytes.size();
    if (!after_slice()) {
      result.end = session_end::stopped;
      return result;
    }
    if (!statuses.flush_unless_busy(busy)) return result;
  }
}

}  // namespace spillway
