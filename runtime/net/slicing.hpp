// How a request is cut into slices: pieces of `slice_size`, a tail of at most
// `fragment_limit` joined to the piece before it (the seed PR's tail merge: one work
// request fewer per chunk), and nothing past the request, hence nothing past its
// segment's end, which the slicer checks first. Pure functions: the slicer and the
// tests share them.
#pragma once

#include <cstdint>

namespace spillway {

struct slicing_rules {
  std::uint64_t slice_size = 64ull << 10;
  std::uint64_t fragment_limit = 16ull << 10;
  bool merge_tail = true;  // false: the naive contender
};

// The length of the next slice when `remaining` bytes of a request are left (> 0).
constexpr std::uint64_t next_slice_length(std::uint64_t remaining, const slicing_rules& rules) {
  if (rules.merge_tail && remaining > rules.slice_size &&
      remaining - rules.slice_size <= rules.fragment_limit)
    return remaining;
  return remaining < rules.slice_size ? remaining : rules.slice_size;
}

// How many slices next_slice_length cuts a request of `length` bytes into.
constexpr std::uint64_t slice_count(std::uint64_t length, const slicing_rules& rules) {
  if (length == 0) return 0;
  const std::uint64_t whole = length / rules.slice_size;
  const std::uint64_t tail = length % rules.slice_size;
  if (tail == 0) return whole;
  if (rules.merge_tail && whole > 0 && tail <= rules.fragment_limit) return whole;
  return whole + 1;
}

}  // namespace spillway
