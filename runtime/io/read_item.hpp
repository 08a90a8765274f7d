// What a batch asks a reader for, one record at a time.
#pragma once

#include <cstdint>

namespace spillway {

// One read: `length` bytes of `fd` at `offset` into `address`, which lies in arena
// chunk `chunk`. `tag` is the asking batch's own number for it.
struct read_item {
  std::uint32_t tag = 0;
  std::int32_t fd = -1;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t address = 0;
  std::uint32_t chunk = 0;
  std::uint8_t fault = 0;  // a read_fault to inject in front of the completion
};

}  // namespace spillway
