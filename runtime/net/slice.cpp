#include "runtime/net/slice.hpp"

#include <iterator>

#include "runtime/io/errno_name.hpp"

namespace spillway {

const char* name_of(transfer_error error) {
  static constexpr const char* names[] = {
    "ok",         "unknown_segment",  "out_of_bounds", "length_overflow", "bad_frame",
    "lane_closed", "peer_unreachable", "timeout",       "unavailable",     "remote_access",
    "local_access", "not_exported",     "read_only"};
  static_assert(std::size(names) == transfer_error_count);
  return names[static_cast<std::size_t>(error)];
}

std::string to_string(const transfer_status& status) {
  return name_with_errno(name_of(status.error), status.sys_errno);
}

}  // namespace spillway
