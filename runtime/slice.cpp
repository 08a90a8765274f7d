#include "runtime/slice.hpp"

#include <cstring>

namespace spillway {

std::string to_string(const transfer_status& status) {
  static constexpr const char* names[] = {
    "ok",         "unknown_segment",  "out_of_bounds", "length_overflow", "bad_frame",
    "lane_closed", "peer_unreachable", "timeout",       "unavailable"};
  std::string text = names[static_cast<std::size_t>(status.error)];
  if (status.sys_errno != 0) {
    const char* name = strerrorname_np(status.sys_errno);
    text.append("(").append(name ? name : std::to_string(status.sys_errno)).append(")");
  }
  return text;
}

}  // namespace spillway
