// The TOML loader on any text: it either returns a node_config that to_toml writes out
// and loads back equal, or throws config_error whose every problem is located as
// "fuzz.toml:<line>:<column>: ". Anything else (another exception, a crash) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/config.hpp"

namespace {

constexpr std::string_view source = "fuzz.toml";

bool located(std::string_view problem) {
  if (!problem.starts_with(source) || !problem.substr(source.size()).starts_with(':'))
    return false;
  auto rest = problem.substr(source.size() + 1);
  for (int field = 0; field < 2; ++field) {  // line, then column
    const auto digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string_view::npos || rest[digits] != ':') return false;
    rest.remove_prefix(digits + 1);
  }
  return rest.starts_with(' ');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  spillway::node_config config;
  try {
    config = spillway::load_config_text(text, source);
  } catch (const spillway::config_error& e) {
    if (e.problems().empty()) std::abort();
    for (const auto& problem : e.problems())
      if (!located(problem)) std::abort();
    return 0;
  }
  if (spillway::load_config_text(spillway::to_toml(config), source) != config) std::abort();
  return 0;
}
