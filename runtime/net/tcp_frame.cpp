#include "runtime/net/tcp_frame.hpp"

#include <bit>
#include <cstring>

namespace spillway {
namespace {

static_assert(std::endian::native == std::endian::little,
              "frames are little-endian and copied as they are");

struct wire_header {  // the layout above, with no padding
  std::uint32_t magic;
  std::uint8_t version;
  std::uint8_t kind;
  std::uint8_t error;
  std::uint8_t reserved;
  std::uint64_t slice_id;
  std::uint64_t segment;
  std::uint64_t offset;
  std::uint64_t length;
};
static_assert(sizeof(wire_header) == frame_header_size);

constexpr auto error_count = static_cast<std::uint8_t>(transfer_error_count);

}  // namespace

frame_bytes encode_frame(const frame_header& h) {
  const wire_header w{frame_magic,     frame_version, static_cast<std::uint8_t>(h.kind),
                      static_cast<std::uint8_t>(h.error), 0, h.slice_id, h.segment,
                      h.offset,        h.length};
  frame_bytes bytes;
  std::memcpy(bytes.data(), &w, sizeof w);
  return bytes;
}

transfer_error decode_frame(const frame_bytes& bytes, frame_header& out) {
  wire_header w;
  std::memcpy(&w, bytes.data(), sizeof w);
  out = {static_cast<frame_kind>(w.kind), static_cast<transfer_error>(w.error), w.slice_id,
         w.segment, w.offset, w.length};
  if (w.magic != frame_magic || w.version != frame_version || w.reserved != 0 ||
      w.kind < static_cast<std::uint8_t>(frame_kind::write) ||
      w.kind > static_cast<std::uint8_t>(frame_kind::hello) || w.error >= error_count)
    return transfer_error::bad_frame;
  if (w.length > frame_payload_max) return transfer_error::length_overflow;
  return transfer_error::none;
}

}  // namespace spillway
