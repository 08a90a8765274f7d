// Tests for parse_size and format_size: the spellings operators may use for byte sizes in a
// config file, the ones they may not, and the shortest exact spelling written back.
#include "config/size.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

using spillway::format_size;
using spillway::parse_size;

TEST_SUITE("size") {
  TEST_CASE("parse_size reads bare byte counts") {
    CHECK(parse_size("0") == 0u);
    CHECK(parse_size("65536") == 65536u);
    CHECK(parse_size("007") == 7u);
    CHECK(parse_size("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
  }

  TEST_CASE("parse_size reads every binary unit") {
    CHECK(parse_size("512B") == 512u);
    CHECK(parse_size("64KiB") == 64u << 10);
    CHECK(parse_size("256MiB") == 256u << 20);
    CHECK(parse_size("1GiB") == std::uint64_t{1} << 30);
    CHECK(parse_size("3TiB") == std::uint64_t{3} << 40);
    CHECK(parse_size("0GiB") == 0u);
  }

  TEST_CASE("parse_size allows one space before the unit") {
    CHECK(parse_size("1 GiB") == std::uint64_t{1} << 30);
    CHECK(parse_size("4 KiB") == 4096u);
    CHECK(parse_size("7 B") == 7u);
    CHECK_FALSE(parse_size("1  GiB"));
    CHECK_FALSE(parse_size("1 "));
    CHECK_FALSE(parse_size(" 1GiB"));
    CHECK_FALSE(parse_size("1GiB "));
  }

  TEST_CASE("parse_size refuses what overflows 64 bits") {
    CHECK_FALSE(parse_size("18446744073709551616"));
    CHECK_FALSE(parse_size("99999999999999999999999"));
    CHECK(parse_size("16777215TiB") == std::uint64_t{16777215} << 40);
    CHECK_FALSE(parse_size("16777216TiB"));
    CHECK_FALSE(parse_size("17179869184GiB"));
  }

  TEST_CASE("parse_size refuses junk") {
    CHECK_FALSE(parse_size(""));
    CHECK_FALSE(parse_size("GiB"));
    CHECK_FALSE(parse_size("-1"));
    CHECK_FALSE(parse_size("+1"));
    CHECK_FALSE(parse_size("1.5GiB"));
    CHECK_FALSE(parse_size("1GB"));
    CHECK_FALSE(parse_size("1gib"));
    CHECK_FALSE(parse_size("1K"));
    CHECK_FALSE(parse_size("1PiB"));
    CHECK_FALSE(parse_size("12 parsecs"));
    CHECK_FALSE(parse_size("0x10"));
    CHECK_FALSE(parse_size("1GiBGiB"));
  }

  TEST_CASE("format_size picks the largest exact unit") {
    CHECK(format_size(0) == "0");
    CHECK(format_size(1) == "1");
    CHECK(format_size(1000) == "1000");
    CHECK(format_size(1023) == "1023");
    CHECK(format_size(1024) == "1KiB");
    CHECK(format_size(1536) == "1536");
    CHECK(format_size(65536) == "64KiB");
    CHECK(format_size(268435456) == "256MiB");
    CHECK(format_size(std::uint64_t{1} << 30) == "1GiB");
    CHECK(format_size(std::uint64_t{3} << 30) == "3GiB");
    CHECK(format_size((std::uint64_t{1} << 30) + (std::uint64_t{1} << 20)) == "1025MiB");
    CHECK(format_size(std::uint64_t{1} << 40) == "1TiB");
    CHECK(format_size(std::uint64_t{1} << 50) == "1024TiB");
    CHECK(format_size(std::numeric_limits<std::uint64_t>::max()) == "18446744073709551615");
  }

  TEST_CASE("format_size output parses back to the same number") {
    for (const std::uint64_t bytes :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{4096},
          std::uint64_t{1536}, std::uint64_t{5} << 20, std::uint64_t{7} << 40,
          std::numeric_limits<std::uint64_t>::max()}) {
      CHECK(parse_size(format_size(bytes)) == bytes);
    }
  }
}
