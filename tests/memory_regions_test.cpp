// The bookkeeping of caller memory: no memory is touched, so addresses are made up.
#include <doctest/doctest.h>

#include <stdexcept>

#include "runtime/memory_regions.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t base = 0x7f0000000000;

TEST_SUITE("memory_regions") {

TEST_CASE("a region is cut into pieces of at most 1 GiB, each in a slot after the arena's") {
  memory_regions regions{4, 8};
  const auto pieces = regions.add(base, 2 * GiB + 4096);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[0] == memory_regions::piece{4, base, GiB});
  CHECK(pieces[1] == memory_regions::piece{5, base + GiB, GiB});
  CHECK(pieces[2] == memory_regions::piece{6, base + 2 * GiB, 4096});
  CHECK(regions.registered_bytes() == 2 * GiB + 4096);
}

TEST_CASE("a range is in a slot only when one piece holds it whole") {
  memory_regions regions{1, 4};
  regions.add(base, GiB + 8192);
  CHECK(regions.slot_of(base, 4096) == 1u);
  CHECK(regions.slot_of(base + GiB - 4096, 4096) == 1u);
  CHECK(regions.slot_of(base + GiB - 4096, 8192) == std::nullopt);  // crosses into the next
  CHECK(regions.slot_of(base + GiB, 8192) == 2u);
  CHECK(regions.slot_of(base + GiB, 8193) == std::nullopt);         // past the region's end
  CHECK(regions.slot_of(base - 4096, 4096) == std::nullopt);
  CHECK(regions.slot_of(base, UINT64_MAX) == std::nullopt);
}

TEST_CASE("empty, wrapping and overlapping regions are refused, and so is one too big") {
  memory_regions regions{0, 2};
  CHECK_THROWS_AS(regions.add(0, 4096), std::invalid_argument);
  CHECK_THROWS_AS(regions.add(base, 0), std::invalid_argument);
  CHECK_THROWS_AS(regions.add(UINT64_MAX - 4095, 8192), std::invalid_argument);
  regions.add(base, 8192);
  CHECK_THROWS_AS(regions.add(base + 4096, 8192), std::invalid_argument);
  CHECK_THROWS_AS(regions.add(base - 4096, 8192), std::invalid_argument);
  try {
    regions.add(base + GiB, 2 * GiB);  // 2 slots needed, 1 free
    FAIL("a region needing more slots than are free was taken");
  } catch (const std::length_error& e) {
    CHECK(std::string(e.what()).find("read.memory_slots = 2") != std::string::npos);
  }
  CHECK(regions.registered_bytes() == 8192);
}

TEST_CASE("a region removed frees its slots, and removing what never was is refused") {
  memory_regions regions{0, 1};
  regions.add(base, 4096);
  CHECK_THROWS_AS(regions.add(base + GiB, 4096), std::length_error);
  CHECK_THROWS_AS(regions.remove(base + 4096), std::invalid_argument);
  CHECK(regions.remove(base) == std::vector<memory_regions::piece>{{0, base, 4096}});
  CHECK(regions.slot_of(base, 4096) == std::nullopt);
  CHECK(regions.add(base + GiB, 4096).front().slot == 0);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
