// The tcp transport's wire format, version 1. Every frame starts with this 40-byte
// header, little-endian:
//
//   magic u32 "SPWT" | version u8 | kind u8 | error u8 | reserved u8 (0)
//   slice_id u64 | segment u64 | offset u64 | length u64
//
// A lane's first frame is a `hello`: `segment` is its route's id, and `length`
// (lane_secret_size) bytes of the route's secret follow (lane_admission.hpp); nothing
// else is read before it passes. Then the lane sends `write` (then `length` payload
// bytes) or `read` frames; the owner
// answers each, in order, with a `status` frame carrying the slice id and an error
// code (transfer_error), followed, for a successful read, by `length` bytes. The owner
// checks the whole header before it touches memory; after any error it answers once
// and drops the connection, because the stream can no longer be trusted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runtime/net/slice.hpp"

namespace spillway {

enum class frame_kind : std::uint8_t { write = 1, read = 2, status = 3, hello = 4 };

struct frame_header {
  frame_kind kind = frame_kind::status;
  transfer_error error = transfer_error::none;
  std::uint64_t slice_id = 0;
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

constexpr std::uint32_t frame_magic = 0x54575053;  // "SPWT" read as little-endian
constexpr std::uint8_t frame_version = 1;
constexpr std::size_t frame_header_size = 40;
// Nothing longer may be sent in one frame: slice_size + fragment_limit at their limits.
constexpr std::uint64_t frame_payload_max = 128ull << 20;

using frame_bytes = std::array<std::byte, frame_header_size>;

frame_bytes encode_frame(const frame_header& header);

// bad_frame for a wrong magic, version or kind, or an error code we do not know;
// length_overflow for a payload over frame_payload_max. `out` is set either way.
transfer_error decode_frame(const frame_bytes& bytes, frame_header& out);

}  // namespace spillway
