// The read arena's memory: one mapping of read.arena_size, backed by hugetlb pages when
// the pool has them, else transparent hugepages, else plain pages, and cut into chunks
// of at most 1 GiB (the kernel refuses to register a larger iovec). Chunks are
// populated one step at a time, so the first can serve while the rest are faulted in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spillway {

enum class arena_pages { hugetlb, thp, plain };
const char* to_string(arena_pages pages);

class arena_memory {
public:
  // `wanted`: "auto" tries hugetlb, then thp, then plain; otherwise that one or throws
  // std::runtime_error saying why it cannot be had.
  arena_memory(std::uint64_t size, std::uint64_t chunk_size, const std::string& wanted);
  ~arena_memory();
  arena_memory(const arena_memory&) = delete;
  arena_memory& operator=(const arena_memory&) = delete;

  std::size_t chunk_count() const { return chunk_sizes_.size(); }
  std::byte* chunk_base(std::size_t chunk) const { return base_ + chunk * chunk_size_; }
  std::uint64_t chunk_size(std::size_t chunk) const { return chunk_sizes_[chunk]; }
  std::uint64_t size() const { return size_; }
  arena_pages pages() const { return pages_; }

  // Faults in up to `step` more bytes of `chunk`; returns the offset and size of what
  // it faulted in. The chunk is whole once populated(chunk) == chunk_size(chunk).
  std::pair<std::uint64_t, std::uint64_t> populate(std::size_t chunk, std::uint64_t step);
  std::uint64_t populated(std::size_t chunk) const { return populated_[chunk]; }

  // How much of the arena the kernel backs with huge pages now (from smaps).
  std::uint64_t huge_bytes() const;

private:
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t chunk_size_ = 0;
  std::vector<std::uint64_t> chunk_sizes_;
  std::vector<std::uint64_t> populated_;  // bytes faulted in, per chunk
  arena_pages pages_ = arena_pages::plain;
};

}  // namespace spillway
