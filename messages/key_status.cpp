#include "messages/key_status.hpp"

#include <cstring>

namespace spillway {

std::string to_string(const key_status& status) {
  static constexpr const char* names[] = {"ok",       "not_found", "corrupt",
                                          "io_error", "too_large", "bad_key",
                                          "no_space", "timeout",   "unavailable"};
  std::string text = names[static_cast<std::size_t>(status.error)];
  if (status.sys_errno != 0) {
    const char* name = strerrorname_np(status.sys_errno);
    text.append("(").append(name ? name : std::to_string(status.sys_errno)).append(")");
  }
  return text;
}

}  // namespace spillway
