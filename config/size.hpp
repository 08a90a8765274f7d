// Byte sizes as operators write them: 65536, "64KiB", "1 GiB", "256MiB".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spillway {

// Accepts digits with an optional binary unit: B, KiB, MiB, GiB, TiB (a space before
// the unit is allowed). Anything else, or a value that overflows 64 bits, is nullopt.
std::optional<std::uint64_t> parse_size(std::string_view text);

// The shortest exact spelling: "256MiB" for 268435456, "1000" for 1000.
std::string format_size(std::uint64_t bytes);

}  // namespace spillway
