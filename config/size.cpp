// Byte sizes as operators write them in config files ("64KiB", "1 GiB", 65536) and as the
// effective config writes them back. Binary units only, and only exact values: a size that
// cannot be represented in 64 bits is refused rather than clamped, so "16EiB"-style
// mistakes never turn into a small number.
#include "config/size.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <system_error>

namespace spillway {
namespace {

struct unit {
  std::string_view name;
  unsigned shift;
};

// Largest first, so format_size can stop at the first unit that divides exactly.
constexpr std::array<unit, 5> units = {{
    {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}};

std::optional<unsigned> unit_shift(std::string_view name) {
  for (const unit& u : units) {
    if (u.name == name) return u.shift;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t number = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  // from_chars on an unsigned type takes neither sign nor leading space: exactly digits.
  auto [end, ec] = std::from_chars(first, last, number);
  if (ec != std::errc{}) return std::nullopt;
  std::string_view suffix(end, static_cast<std::size_t>(last - end));
  if (suffix.empty()) return number;
  if (suffix.front() == ' ') suffix.remove_prefix(1);
  const std::optional<unsigned> shift = unit_shift(suffix);
  if (!shift) return std::nullopt;
  if (number > (std::numeric_limits<std::uint64_t>::max() >> *shift)) return std::nullopt;
  return number << *shift;
}

std::string format_size(std::uint64_t bytes) {
  if (bytes == 0) return "0";
  for (const unit& u : units) {
    const std::uint64_t mask = (std::uint64_t{1} << u.shift) - 1;
    if (u.shift > 0 && (bytes & mask) == 0) {
      return std::to_string(bytes >> u.shift) + std::string(u.name);
    }
  }
  return std::to_string(bytes);
}

}  // namespace spillway
