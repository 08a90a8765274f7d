// Status frames of writes are gathered and sent together once the lane has nothing
// more queued on the socket (FIONREAD = 0), so a pipelined group costs a few sends,
// not one per slice; reads answer at once, since their data follows the status.
#include "runtime/tcp_session.hpp"

#include <sys/ioctl.h>

#include <vector>

#include "runtime/tcp_frame.hpp"
#include "runtime/tcp_socket.hpp"

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
  bool flush_if_idle() {
    int queued = 0;
    if (pending_.size() < statuses_max && ::ioctl(fd_, FIONREAD, &queued) == 0 && queued > 0)
      return true;
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

}  // namespace

void serve_tcp_session(int fd, const segment_table& segments,
                       const std::function<bool()>& after_slice) {
  status_writer statuses{fd};
  for (;;) {
    frame_bytes bytes;
    if (!recv_all(fd, bytes.data(), bytes.size())) break;  // closed, reset or truncated
    frame_header header;
    std::byte* where = nullptr;
    const auto error = check_frame(bytes, segments, header, where);
    if (error != transfer_error::none) {
      statuses.add(header.slice_id, error);
      break;
    }
    if (header.kind == frame_kind::write) {
      if (!recv_all(fd, where, header.length)) break;
      statuses.add(header.slice_id, transfer_error::none);
    } else {
      statuses.add(header.slice_id, transfer_error::none, header.length);
      if (!statuses.flush() || !send_all(fd, where, header.length)) return;
    }
    if (!after_slice() || !statuses.flush_if_idle()) return;
  }
  statuses.flush();
}

}  // namespace spillway
