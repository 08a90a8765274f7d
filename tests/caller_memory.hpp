// Caller memory for get_batch_into: one anonymous mapping, so page-aligned, every byte a
// canary until something writes it; each key gets a buffer of its own inside, a page of
// canary between one and the next, to show a read wrote nothing past its value.
#pragma once

#include <sys/mman.h>

#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace spillway::test {

constexpr std::byte canary{0xa5};

class caller_memory {
public:
  static constexpr std::size_t page = 4096;

  // A buffer of `sizes[k] + slack` bytes per key, starting `shift` bytes past a page
  // boundary (0: page-aligned).
  caller_memory(const std::vector<std::size_t>& sizes, std::size_t slack, std::size_t shift) {
    std::vector<std::size_t> starts;
    for (const auto s : sizes) {
      starts.push_back(size_ + shift);
      size_ += (shift + s + slack + page - 1) / page * page + page;
    }
    if (size_ == 0) return;  // no keys
    void* base = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base != MAP_FAILED);
    base_ = static_cast<std::byte*>(base);
    std::memset(base_, static_cast<int>(canary), size_);
    for (std::size_t k = 0; k < sizes.size(); ++k)
      buffers_.push_back({base_ + starts[k], sizes[k] + slack});
  }
  ~caller_memory() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  caller_memory(const caller_memory&) = delete;
  caller_memory& operator=(const caller_memory&) = delete;

  void* base() const { return base_; }
  std::size_t size() const { return size_; }
  const std::vector<std::span<std::byte>>& buffers() const { return buffers_; }

  // Key k's buffer holds `value` and nothing of it was written past the value.
  bool holds(std::size_t k, const std::string& value) const {
    const auto b = buffers_[k];
    if (value.size() > b.size() || std::memcmp(b.data(), value.data(), value.size()) != 0)
      return false;
    return untouched(k, value.size());
  }

  // Key k's buffer from byte `from` on still holds the canary.
  bool untouched(std::size_t k, std::size_t from) const {
    const auto b = buffers_[k];
    for (auto i = from; i < b.size(); ++i)
      if (b[i] != canary) return false;
    return true;
  }

private:
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::vector<std::span<std::byte>> buffers_;
};

}  // namespace spillway::test
