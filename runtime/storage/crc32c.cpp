#include "runtime/storage/crc32c.hpp"

#include <algorithm>

#include <isa-l/crc.h>

namespace spillway {

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) {
  constexpr std::size_t step = 1u << 30;  // crc32_iscsi takes an int length
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
  std::uint32_t reg = ~crc;
  for (std::size_t done = 0; done < size; done += step) {
    const auto n = std::min(step, size - done);
    reg = crc32_iscsi(bytes + done, static_cast<int>(n), reg);
  }
  return ~reg;
}

}  // namespace spillway
