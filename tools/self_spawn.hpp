// Children of the `spillway` command run from /proc/self/exe (the benches' peers and
// nodes), their stderr piped back to the parent, which reads it a byte at a time so
// that nothing past the line it waits for is consumed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/io/unique_fd.hpp"

namespace spillway::bench {

// Starts `spillway args...`; `stderr_read` gets the read end of its stderr. Throws
// std::runtime_error when it cannot be started.
pid_t spawn_self(const std::vector<std::string>& args, unique_fd& stderr_read);

// The next line from `fd`, its newline included; what there was when the writer closed.
std::string read_line(int fd);

}  // namespace spillway::bench
