#include "runtime/storage/key_status.hpp"

#include "runtime/io/errno_name.hpp"

namespace spillway {

std::string to_string(const key_status& status) {
  static constexpr const char* names[] = {"ok",       "not_found", "corrupt",
                                          "io_error", "too_large", "bad_key",
                                          "no_space", "timeout",   "unavailable"};
  return name_with_errno(names[static_cast<std::size_t>(status.error)], status.sys_errno);
}

}  // namespace spillway
