#include "messages/key_status.hpp"

#include <cstring>

namespace spillway {

std::string to_string(const key_status& status) {
  static constexpr const char* names[] = {"ok",       "not_found", "corrupt",
                                          "io_error", "too_large", "bad_key",
                                          "no_space", "timeout",   "unavailable"};
  return name_with_errno(names[static_cast<std::size_t>(status.error)], status.sys_errno);
}

std::string name_with_errno(const char* name, std::int32_t sys_errno) {
  std::string text = name;
  if (sys_errno != 0) {
    const char* symbol = strerrorname_np(sys_errno);
    text.append("(").append(symbol ? symbol : std::to_string(sys_errno)).append(")");
  }
  return text;
}

}  // namespace spillway
