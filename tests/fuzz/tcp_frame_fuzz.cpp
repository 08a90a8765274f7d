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
  segment_table segments;
  owner() {
    segments.add(first.get(), first_size);
    segments.add(second.get(), second_size);
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

void serve(const std::uint8_t* data, std::size_t size, const segment_table& segments) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) std::abort();
  if (!send_all(ends[0], data, size) || ::shutdown(ends[0], SHUT_WR) != 0) std::abort();
  serve_tcp_session(ends[1], segments, [] { return true; });
  ::close(ends[0]);
  ::close(ends[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static owner o;
  size = std::min(size, input_max);
  round_trip(data, size);
  serve(data, size, o.segments);
  return 0;
}
