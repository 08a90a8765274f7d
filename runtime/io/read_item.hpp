// What a batch asks a reader for, one record at a time.
#pragma once

#include <cstdint>

namespace spillway {

// A slot of the registered buffer table that no buffer is ever in: a read aimed there
// goes through a plain read.
constexpr std::uint32_t no_slot = UINT32_MAX;

// One read: `length` bytes of `fd` at `offset` into `address`, which lies in the
// registered buffer of slot `chunk` (an arena chunk, a piece of caller memory) or in
// none (no_slot). `tag` is the asking batch's own number for it.
struct read_item {
  std::uint32_t tag = 0;
  std::int32_t fd = -1;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t address = 0;
  std::uint32_t chunk = 0;
  std::uint8_t fault = 0;  // a read_fault to inject in front of the completion
  // A value's last page, read into an extent beside the value's pages read in place:
  // it takes a slot outside the reader's window (read_ring.hpp).
  bool companion = false;
};

// Where a caller wants one value (node::get_batch_into): `capacity` bytes at `address`,
// inside the registered piece of slot `slot` (node::register_memory), or no_slot.
struct read_target {
  std::uint64_t address = 0;
  std::uint64_t capacity = 0;
  std::uint32_t slot = no_slot;
};

}  // namespace spillway
