// CRC-32C (Castagnoli) over bytes, computed by ISA-L (libisal), which uses the
// SSE4.2 crc32 instruction and PCLMUL where the CPU has them and a table otherwise.
// ISA-L's crc32_iscsi takes and returns the register un-inverted; these wrappers give
// the usual convention: crc32c("123456789") == 0xe3069283.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// Continues `crc` (a finished CRC-32C of earlier bytes, 0 for none) over more bytes.
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);

inline std::uint32_t crc32c(const void* data, std::size_t size) {
  return crc32c_extend(0, data, size);
}

// CRCs are stored masked, as LevelDB does: a CRC computed over bytes that themselves
// hold CRCs (an index of records, say) would otherwise be weak.
inline std::uint32_t mask_crc(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

inline std::uint32_t unmask_crc(std::uint32_t masked) {
  const std::uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace spillway
