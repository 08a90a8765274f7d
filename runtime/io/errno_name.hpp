// How every per-key, per-request and per-slice status prints an errno: by its
// symbolic name, which a log reader can grep for, not by its number.
#pragma once

#include <cstdint>
#include <string>

namespace spillway {

// `name`, and the errno's symbolic name in parentheses when there is one:
// "io_error(EIO)", "lane_closed(ECONNRESET)", or just "ok" for errno 0.
std::string name_with_errno(const char* name, std::int32_t sys_errno);

}  // namespace spillway
