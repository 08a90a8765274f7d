// Segments: memory a peer may touch. The side that owns the memory registers it here
// and checks every slice against it before a byte is read or written, so no peer can
// reach outside what was registered. Thread-safe: tcp server threads look up while
// the node registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <shared_mutex>
#include <vector>

#include "runtime/net/slice.hpp"

namespace spillway {

// What a peer needs to address a segment. `base` is the owner's address (RDMA
// addresses remote memory by it); `rkey` is the RDMA memory region's key, 0 elsewhere.
struct segment_descriptor {
  std::uint64_t id = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::uint32_t rkey = 0;

  bool operator==(const segment_descriptor&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, segment_descriptor& x) {
  return f(x.id, x.base, x.length, x.rkey);
}

// The descriptor of segment `id` among `segments`, or null.
const segment_descriptor* find_segment(const std::vector<segment_descriptor>& segments,
                                       std::uint64_t id);

// The whole check, shared by owners and by slicers holding a peer's descriptors:
// none, unknown_segment (null), length_overflow or out_of_bounds.
transfer_error check_bounds(const segment_descriptor* segment, std::uint64_t offset,
                            std::uint64_t length);

class segment_table {
public:
  // Ids start at 1 and are never reused.
  segment_descriptor add(std::byte* base, std::uint64_t length, std::uint32_t rkey = 0);
  std::vector<segment_descriptor> list() const;

  // The address of [offset, offset + length) in segment `id`, or the reason there is
  // none; `where` is set only on success.
  transfer_error resolve(std::uint64_t id, std::uint64_t offset, std::uint64_t length,
                         std::byte*& where) const;

private:
  const segment_descriptor* find(std::uint64_t id) const;  // caller holds mutex_

  mutable std::shared_mutex mutex_;
  std::vector<segment_descriptor> segments_;  // by id - 1
};

}  // namespace spillway
