#include "runtime/net/tcp_lane.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace spillway {

struct tcp_lane::exchange {
  std::vector<slice*>& items;
  std::uint64_t first_id;
  std::size_t sent = 0;          // slices whose frame is fully sent
  std::size_t frame_done = 0;    // bytes of the current frame sent
  frame_bytes header{};          // the current frame's header, once encoded
  std::size_t acked = 0;         // slices with their status
  std::size_t payload_left = 0;  // bytes of a read still to come for items[acked]
};

tcp_lane::tcp_lane(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
                   lane_ticket ticket)
    : host_(std::move(host)), port_(port), slice_timeout_(timeout), ticket_(std::move(ticket)) {}

namespace {

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

// After recv answered n <= 0: whether the lane is still good (it would only block).
// End of stream leaves errno 0, so the slices fail as lane_closed with no errno.
bool recv_blocked(ssize_t n) {
  if (n == 0) errno = 0;
  return n < 0 && would_block();
}

std::uint64_t payload_of(const slice& s) {
  return s.op == transfer_op::write ? s.length : 0;
}

// The hello and the secret, in one send: a fresh socket's buffer takes 72 bytes at once.
bool send_hello(int fd, const lane_ticket& ticket) {
  std::array<std::byte, frame_header_size + lane_secret_size> hello{};
  const auto header = encode_frame({frame_kind::hello, transfer_error::none, 0, ticket.route, 0,
                                    lane_secret_size});
  std::memcpy(hello.data(), header.data(), header.size());
  std::memcpy(hello.data() + header.size(), ticket.secret.data(),
              std::min(ticket.secret.size(), lane_secret_size));
  return send_all(fd, hello.data(), hello.size());
}

// Between groups nothing is owed on a lane, so a readable socket means the owner hung
// up (it closes lanes idle past its lane_idle_timeout_ms): made again, not failed on.
bool closed_by_owner(int fd) {
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace

void tcp_lane::fail_rest(exchange& x, transfer_status status) {
  for (auto i = x.acked; i < x.items.size(); ++i) x.items[i]->status = status;
  x.acked = x.items.size();
  fd_.reset();
  inbox_begin_ = inbox_end_ = 0;
}

bool tcp_lane::push(exchange& x) {
  while (x.sent < x.items.size()) {
    const slice& s = *x.items[x.sent];
    if (x.frame_done == 0)
      x.header = encode_frame({s.op == transfer_op::write ? frame_kind::write : frame_kind::read,
                               transfer_error::none, x.first_id + x.sent, s.segment, s.offset,
                               s.length});
    iovec parts[2];
    int count = 0;
    if (x.frame_done < frame_header_size)
      parts[count++] = {x.header.data() + x.frame_done, frame_header_size - x.frame_done};
    const auto payload_sent =
      x.frame_done > frame_header_size ? x.frame_done - frame_header_size : 0;
    if (payload_of(s) > payload_sent)
      parts[count++] = {s.local + payload_sent, payload_of(s) - payload_sent};
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t n = ::sendmsg(fd_.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return would_block();
    x.frame_done += static_cast<std::size_t>(n);
    if (x.frame_done == frame_header_size + payload_of(s)) {
      ++x.sent;
      x.frame_done = 0;
    }
  }
  return true;
}

// A status frame for items[acked]: anything but the next slice's status, in order, is
// a peer that broke the protocol. The owner refuses a write once its header is in,
// without reading its payload, so a refusal may come while that payload is still going
// out: then the frame can never be finished, and the lane ends with it.
bool tcp_lane::take_status(exchange& x, const frame_bytes& bytes) {
  frame_header h;
  const bool mid_frame = x.acked == x.sent && x.sent < x.items.size() &&
                         x.frame_done >= frame_header_size;
  const bool valid = decode_frame(bytes, h) == transfer_error::none &&
                     h.kind == frame_kind::status && (x.acked < x.sent || mid_frame) &&
                     h.slice_id == x.first_id + x.acked;
  slice* s = valid ? x.items[x.acked] : nullptr;
  if (s == nullptr || (mid_frame && h.error == transfer_error::none) ||
      (h.error == transfer_error::none && s->op == transfer_op::read &&
       h.length != s->length)) {
    fail_rest(x, {transfer_error::bad_frame, 0});
    return false;
  }
  s->status = {h.error, 0};
  if (mid_frame) {
    ++x.acked;
    fail_rest(x, {transfer_error::lane_closed, 0});
    return false;
  }
  if (h.error == transfer_error::none && s->op == transfer_op::read)
    x.payload_left = s->length;  // the slice is settled once its bytes are in
  else
    ++x.acked;
  return true;
}

bool tcp_lane::pull(exchange& x) {
  while (x.acked < x.items.size()) {
    const auto buffered = inbox_end_ - inbox_begin_;
    if (x.payload_left > 0) {  // a read's bytes go straight to the caller's memory
      slice& s = *x.items[x.acked];
      std::byte* to = s.local + (s.length - x.payload_left);
      const auto from_inbox = std::min(buffered, x.payload_left);
      std::memcpy(to, inbox_.data() + inbox_begin_, from_inbox);
      inbox_begin_ += from_inbox;
      x.payload_left -= from_inbox;
      const ssize_t n = x.payload_left == 0 ? 0 : ::recv(fd_.get(), to + from_inbox,
                                                         x.payload_left, MSG_DONTWAIT);
      if (x.payload_left > 0 && n <= 0) return recv_blocked(n);
      x.payload_left -= static_cast<std::size_t>(n);
      if (x.payload_left == 0) ++x.acked;
      continue;
    }
    if (buffered >= frame_header_size) {
      frame_bytes bytes;
      std::memcpy(bytes.data(), inbox_.data() + inbox_begin_, frame_header_size);
      inbox_begin_ += frame_header_size;
      if (!take_status(x, bytes)) return true;  // failed the rest already
      continue;
    }
    std::memmove(inbox_.data(), inbox_.data() + inbox_begin_, buffered);
    inbox_begin_ = 0;
    inbox_end_ = buffered;
    const ssize_t n = ::recv(fd_.get(), inbox_.data() + inbox_end_, inbox_.size() - inbox_end_,
                             MSG_DONTWAIT);
    if (n <= 0) return recv_blocked(n);
    inbox_end_ += static_cast<std::size_t>(n);
  }
  return true;
}

void tcp_lane::run(slice_group& group) {
  exchange x{group.items, next_slice_id_};
  next_slice_id_ += group.items.size();
  if (fd_ && closed_by_owner(fd_.get())) fd_.reset();
  if (!fd_) {
    int error = 0;
    fd_ = connect_tcp(host_, port_, error);
    inbox_begin_ = inbox_end_ = 0;
    if (fd_ && !send_hello(fd_.get(), ticket_)) {
      error = errno != 0 ? errno : EPIPE;
      fd_.reset();
    }
    if (!fd_) return fail_rest(x, {transfer_error::peer_unreachable, error});
  }
  group.started = transfer_clock::now();
  while (x.acked < x.items.size()) {
    pollfd p{fd_.get(), static_cast<short>(POLLIN | (x.sent < x.items.size() ? POLLOUT : 0)),
             0};
    const int ready = ::poll(&p, 1, static_cast<int>(slice_timeout_.count()));
    if (ready == 0) return fail_rest(x, {transfer_error::timeout, 0});
    if (ready < 0 && errno == EINTR) continue;
    // errno is poll's, or that of the send or receive that failed (0: end of stream).
    if (ready < 0) return fail_rest(x, {transfer_error::lane_closed, errno});
    // A refused frame comes back as its status, then the owner closes the lane; if our
    // frame's payload was still arriving, that close resets the connection and our send
    // fails. The status is in our socket already and names the slice's real error, so
    // it is read before the failed send ends the lane: else the slice would be retried
    // as a lost lane, and refused again.
    const bool pushed = push(x);
    const int send_errno = errno;
    if (!pull(x)) return fail_rest(x, {transfer_error::lane_closed, errno});
    if (!pushed) return fail_rest(x, {transfer_error::lane_closed, send_errno});
  }
}

}  // namespace spillway
