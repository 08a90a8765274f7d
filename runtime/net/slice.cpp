#include "runtime/net/slice.hpp"

#include "runtime/io/errno_name.hpp"

namespace spillway {

std::string to_string(const transfer_status& status) {
  static constexpr const char* names[] = {
    "ok",         "unknown_segment",  "out_of_bounds", "length_overflow", "bad_frame",
    "lane_closed", "peer_unreachable", "timeout",       "unavailable",     "remote_access",
    "local_access"};
  return name_with_errno(names[static_cast<std::size_t>(status.error)], status.sys_errno);
}

}  // namespace spillway
