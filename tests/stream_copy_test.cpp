// stream_copy against memcpy's contract: every byte of the range, none outside it, for
// every alignment of either side and lengths around each of its cut points (the line,
// four pages side by side).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "runtime/io/stream_copy.hpp"

namespace spillway {
namespace {

TEST_SUITE("stream-copy") {

TEST_CASE("stream_copy copies exactly the range at every alignment and cut point") {
  constexpr std::size_t guard = 64;
  const std::size_t lengths[] = {0,     1,     63,    64,    65,    127,   4095, 4096,
                                 16383, 16384, 16385, 16447, 40000, 65536, 65553};
  std::vector<std::byte> from(65553 + 2 * guard);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = std::byte(i * 131 + (i >> 8));
  std::vector<std::byte> to(from.size() + 2 * guard);
  for (const std::size_t length : lengths) {
    for (const std::size_t to_at : {guard, guard + 1, guard + 17, guard + 63}) {
      for (const std::size_t from_at : {std::size_t{0}, std::size_t{5}}) {
        CAPTURE(length);
        CAPTURE(to_at);
        CAPTURE(from_at);
        std::memset(to.data(), 0xee, to.size());
        stream_copy(to.data() + to_at, from.data() + from_at, length);
        std::vector<std::byte> expected(to.size(), std::byte{0xee});
        std::memcpy(expected.data() + to_at, from.data() + from_at, length);
        CHECK(to == expected);
      }
    }
  }
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
