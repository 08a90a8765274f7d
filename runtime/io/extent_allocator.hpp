// Hands out the arena's memory as page-aligned extents, each inside one chunk. A batch
// asks for many extents at once; they are packed into a few contiguous runs, so the
// bookkeeping (and its allocations) is per run, not per value.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace spillway {

struct arena_extent {
  std::uint32_t chunk = 0;
  std::uint64_t offset = 0;  // from the chunk's base
  std::uint64_t size = 0;
  bool operator==(const arena_extent&) const = default;
};

class extent_allocator {
public:
  // Bytes [offset, offset + size) of the chunk become allocatable: a chunk comes in
  // piece by piece as it is populated, and an extent never leaves its chunk.
  void add(std::uint32_t chunk, std::uint64_t offset, std::uint64_t size);

  // Places `sizes` in order, each rounded up to a page, as long as they fit; returns
  // how many were placed. `extents` gets one entry per placed size, `runs` the ranges
  // taken, which release() gives back.
  std::size_t allocate(std::span<const std::uint64_t> sizes, std::vector<arena_extent>& extents,
                       std::vector<arena_extent>& runs);

  void release(std::span<const arena_extent> runs);

  std::uint64_t free_bytes() const { return free_bytes_; }
  std::uint64_t total_bytes() const { return total_bytes_; }

private:
  using free_map = std::map<std::uint64_t, std::uint64_t>;  // offset -> size, coalesced

  // Takes the first free range of at least `size` bytes out of its map.
  bool take_range(std::uint64_t size, arena_extent& range);
  void give_back(const arena_extent& range);

  std::vector<free_map> free_;  // per chunk
  std::uint64_t free_bytes_ = 0;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace spillway
