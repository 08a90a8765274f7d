#include "runtime/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace spillway {

void configure_logging(std::string_view level) {
  static const bool installed = [] {
    spdlog::set_default_logger(spdlog::stderr_color_mt("spillway"));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    return true;
  }();
  (void)installed;
  spdlog::set_level(spdlog::level::from_str(std::string{level}));
}

}  // namespace spillway
