// Logging goes through spdlog, to stderr, so stdout stays for what a command prints.
#pragma once

#include <string_view>

namespace spillway {

// Sets the level by node.log_level's name (trace ... off); unknown names mean info.
void configure_logging(std::string_view level);

}  // namespace spillway
