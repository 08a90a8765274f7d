// Logging goes through spdlog, to stderr, so stdout stays for what a command prints.
#pragma once

#include <string_view>

namespace spillway {

// Sets the level by node.log_level's name (trace ... off; unknown names mean info) and
// the line format by node.log_format's: "text" (time, level, message) or "json", one
// object a line for log shippers: {"time":"...","level":"warn","msg":"..."}.
void configure_logging(std::string_view level, std::string_view format = "text");

}  // namespace spillway
