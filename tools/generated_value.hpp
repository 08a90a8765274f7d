// Values that anyone can recompute from a seed and a key: `spillway gen` writes them,
// tests and benchmarks check them. The bytes are a splitmix64 stream, little-endian,
// seeded with seed ^ fnv1a64(key); a tail shorter than 8 bytes takes the first bytes
// of the next word.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace spillway {

void fill_generated_value(std::span<std::byte> out, std::uint64_t seed, std::string_view key);

std::string generated_value(std::size_t size, std::uint64_t seed, std::string_view key);

// "<prefix><index, 10 digits>": gen-0000000042.
std::string generated_key(std::string_view prefix, std::uint64_t index);

}  // namespace spillway
