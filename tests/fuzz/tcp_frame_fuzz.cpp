// What a tcp peer sends, as the owner takes it: 40-byte frame headers one after another,
// each decoded and, if it asks for memory, resolved against a segment table of real
// buffers and the resolved range touched, so that a range the checks let through but the
// segment does not hold is an ASan report. A header that decodes is encoded back to the
// same bytes: the decoder accepts exactly what the encoder writes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/net/segment.hpp"
#include "runtime/net/tcp_frame.hpp"

namespace {

using namespace spillway;

struct owner {
  // Small and of odd sizes, so that an off-by-one at either end lands in a redzone.
  std::unique_ptr<std::byte[]> first{new std::byte[4096]};
  std::unique_ptr<std::byte[]> second{new std::byte[17]};
  segment_table segments;
  owner() {
    segments.add(first.get(), 4096);
    segments.add(second.get(), 17);
  }
};

void take(const frame_bytes& bytes, const segment_table& segments) {
  frame_header header;
  const auto error = decode_frame(bytes, header);
  if (error == transfer_error::bad_frame) return;
  if (encode_frame(header) != bytes) std::abort();
  if (error != transfer_error::none || header.kind == frame_kind::status) return;
  std::byte* where = nullptr;
  if (segments.resolve(header.segment, header.offset, header.length, where) !=
      transfer_error::none)
    return;
  if (header.length > 0) {
    // The first and the last byte of the range: enough for ASan to see either end.
    where[0] = std::byte{1};
    where[header.length - 1] = std::byte{1};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static owner o;
  for (std::size_t at = 0; size - at >= frame_header_size; at += frame_header_size) {
    frame_bytes bytes;
    std::memcpy(bytes.data(), data + at, frame_header_size);
    take(bytes, o.segments);
  }
  return 0;
}
