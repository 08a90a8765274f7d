// What a tcp peer sends to the owner of the memory: the input goes down a socketpair to
// the real serve_tcp_session, which checks each frame against a segment table of two
// small buffers and moves the payloads in and out of them. A range the checks let
// through that the buffer does not hold is an ASan report (it sees the session's
// readv and send). Every 40 bytes of the input are also decoded on their own, and a
// header that decodes must encode back to the same bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/net/segment.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_session.hpp"
#include "runtime/net/tcp_socket.hpp"

namespace {

using namespace spillway;

// Short enough that every reply fits the socketpair's buffer: the session answers
// while nothing reads its answers. Small odd-sized segments put either end near a redzone.
constexpr std::size_t input_max = 16384;
constexpr std::size_t first_size = 64;
constexpr std::size_t second_size = 17;

struct owner {
  std::unique_ptr<std::byte[]> first{new std::byte[first_size]};
  std::unique_ptr<std::byte[]> second{new std::byte[second_size]};
  segment_table segments{"fuzz"};
  lane_admission admission;
  lane_ticket ticket = admission.issue("fuzz");
  owner() {
    segments.add(first.get(), first_size);
    segments.add(second.get(), second_size, segment_export::to({}, segment_access::read_only));
  }
};

void round_trip(const std::uint8_t* data, std::size_t size) {
  for (std::size_t at = 0; size - at >= frame_header_size; at += frame_header_size) {
    frame_bytes bytes;
    std::memcpy(bytes.data(), data + at, frame_header_size);
    frame_header header;
    if (decode_frame(bytes, header) != transfer_error::bad_frame &&
        encode_frame(header) != bytes)
      std::abort();
  }
}

// An input whose first byte is odd comes after a valid hello, so that the frames behind
// the admission get fuzzed too; the others must get past the hello themselves.
void serve(const std::uint8_t* data, std::size_t size, const owner& o) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) std::abort();
  if (size > 0 && (data[0] & 1) != 0) {
    const auto hello = encode_frame({frame_kind::hello, {}, 0, o.ticket.route, 0,
                                     o.ticket.secret.size()});
    if (!send_all(ends[0], hello.data(), hello.size()) ||
        !send_all(ends[0], o.ticket.secret.data(), o.ticket.secret.size()))
      std::abort();
  }
  if (!send_all(ends[0], data, size) || ::shutdown(ends[0], SHUT_WR) != 0) std::abort();
  serve_tcp_session(ends[1], o.segments, o.admission,
                    {std::chrono::milliseconds{1000}, std::chrono::milliseconds{1000}},
                    [] { return true; });
  ::close(ends[0]);
  ::close(ends[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static owner o;
  size = std::min(size, input_max);
  round_trip(data, size);
  serve(data, size, o);
  return 0;
}
