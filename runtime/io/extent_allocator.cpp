#include "runtime/io/extent_allocator.hpp"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace spillway {
namespace {

constexpr std::uint64_t page = 4096;

std::uint64_t pages_for(std::uint64_t bytes) { return (bytes + page - 1) / page * page; }

}  // namespace

void extent_allocator::add(std::uint32_t chunk, std::uint64_t offset, std::uint64_t size) {
  if (free_.size() <= chunk) free_.resize(chunk + 1);
  assert(offset % page == 0 && size % page == 0);
  give_back({chunk, offset, size});
  free_bytes_ += size;
  total_bytes_ += size;
}

bool extent_allocator::take_range(std::uint64_t size, arena_extent& range) {
  for (std::uint32_t c = 0; c < free_.size(); ++c)
    for (auto it = free_[c].begin(); it != free_[c].end(); ++it)
      if (it->second >= size) {
        range = {c, it->first, it->second};
        free_[c].erase(it);
        return true;
      }
  return false;
}

void extent_allocator::give_back(const arena_extent& range) {
  auto& chunk = free_[range.chunk];
  auto [it, fresh] = chunk.emplace(range.offset, range.size);
  assert(fresh);
  if (auto next = std::next(it); next != chunk.end() && it->first + it->second == next->first) {
    it->second += next->second;
    chunk.erase(next);
  }
  if (it != chunk.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      chunk.erase(it);
    }
  }
}

std::size_t extent_allocator::allocate(std::span<const std::uint64_t> sizes,
                                       std::vector<arena_extent>& extents,
                                       std::vector<arena_extent>& runs) {
  arena_extent range{};  // the free range being filled
  std::uint64_t used = 0;
  bool open = false;
  auto close = [&] {
    if (!open) return;
    if (used > 0) runs.push_back({range.chunk, range.offset, used});
    if (range.size > used) give_back({range.chunk, range.offset + used, range.size - used});
    open = false;
  };
  std::size_t placed = 0;
  for (; placed < sizes.size(); ++placed) {
    const auto size = pages_for(std::max<std::uint64_t>(sizes[placed], 1));
    if (!open || range.size - used < size) {
      close();
      if (!take_range(size, range)) break;
      used = 0;
      open = true;
    }
    extents.push_back({range.chunk, range.offset + used, size});
    used += size;
    free_bytes_ -= size;
  }
  close();
  return placed;
}

void extent_allocator::release(std::span<const arena_extent> runs) {
  for (const auto& r : runs) {
    give_back(r);
    free_bytes_ += r.size;
  }
}

}  // namespace spillway
