#include "runtime/storage/key_status.hpp"

#include "runtime/io/errno_name.hpp"

namespace spillway {

const char* name_of(key_error error) {
  static constexpr const char* names[key_error_count] = {
    "ok", "not_found", "corrupt", "io_error", "too_large", "bad_key", "no_space", "timeout",
    "unavailable", "bad_range"};
  return names[static_cast<std::size_t>(error)];
}

std::string to_string(const key_status& status) {
  return name_with_errno(name_of(status.error), status.sys_errno);
}

}  // namespace spillway
