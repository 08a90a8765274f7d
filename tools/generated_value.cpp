#include "tools/generated_value.hpp"

#include <cstdio>
#include <cstring>

namespace spillway {
namespace {

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void fill_generated_value(std::span<std::byte> out, std::uint64_t seed, std::string_view key) {
  std::uint64_t state = seed ^ fnv1a64(key);
  std::size_t at = 0;
  for (; at + 8 <= out.size(); at += 8) {
    const std::uint64_t word = splitmix64(state);
    std::memcpy(out.data() + at, &word, 8);
  }
  if (at < out.size()) {
    const std::uint64_t word = splitmix64(state);
    std::memcpy(out.data() + at, &word, out.size() - at);
  }
}

std::string generated_value(std::size_t size, std::uint64_t seed, std::string_view key) {
  std::string value(size, '\0');
  fill_generated_value({reinterpret_cast<std::byte*>(value.data()), size}, seed, key);
  return value;
}

std::string generated_key(std::string_view prefix, std::uint64_t index) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%010llu", static_cast<unsigned long long>(index));
  return std::string{prefix} + digits;
}

}  // namespace spillway
