#include "runtime/io/errno_name.hpp"

#include <cstring>

namespace spillway {

std::string name_with_errno(const char* name, std::int32_t sys_errno) {
  std::string text = name;
  if (sys_errno != 0) {
    const char* symbol = strerrorname_np(sys_errno);
    text.append("(").append(symbol ? symbol : std::to_string(sys_errno)).append(")");
  }
  return text;
}

}  // namespace spillway
