// A write path's failed system call, as the writers report it: the errno decides the
// caller's answer (ENOSPC is no_space), the text names the call and the file.
#pragma once

#include <cstring>
#include <filesystem>
#include <string>

namespace spillway {

struct io_failure {
  int sys_errno = 0;
  std::string what;  // "write /data/00010000000000a1.tmp: No space left on device"
};

inline io_failure make_io_failure(int err, const char* op, const std::filesystem::path& path) {
  return {err, std::string{op} + " " + path.string() + ": " + std::strerror(err)};
}

}  // namespace spillway
