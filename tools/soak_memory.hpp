// Caller memory for the soak: one anonymous mapping (so page-aligned), every byte a
// canary until something writes it, so a read that wrote past its value shows.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <span>

namespace spillway::soak {

constexpr std::size_t page_bytes = 4096;
constexpr std::byte canary{0xa5};

inline std::size_t whole_pages(std::size_t bytes) {
  return (bytes + page_bytes - 1) / page_bytes * page_bytes;
}

class mapped_memory {
public:
  explicit mapped_memory(std::size_t bytes) : size_(whole_pages(std::max<std::size_t>(bytes, 1))) {
    void* base = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc{};
    base_ = static_cast<std::byte*>(base);
    fill_canary();
  }
  ~mapped_memory() { ::munmap(base_, size_); }
  mapped_memory(const mapped_memory&) = delete;
  mapped_memory& operator=(const mapped_memory&) = delete;

  std::byte* data() const { return base_; }
  std::size_t size() const { return size_; }
  void fill_canary() { std::memset(base_, static_cast<int>(canary), size_); }

  // Nothing in `span` (inside this memory) was written since the canary went in.
  static bool untouched(std::span<const std::byte> span) {
    return std::all_of(span.begin(), span.end(), [](std::byte b) { return b == canary; });
  }

private:
  std::size_t size_;
  std::byte* base_ = nullptr;
};

}  // namespace spillway::soak
