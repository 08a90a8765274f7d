// The few socket calls the tcp transport needs, with errors as errno values rather
// than exceptions: a dropped connection is an everyday event for a lane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/io/unique_fd.hpp"

namespace spillway {

// A connected TCP socket with TCP_NODELAY, or an empty one and `error` set.
unique_fd connect_tcp(const std::string& host, std::uint16_t port, int& error);

// A listening socket on host:port (0 = any free port); throws std::system_error.
unique_fd listen_tcp(const std::string& host, std::uint16_t port);
std::uint16_t local_port(int fd);

// The next connection on `listener`, with TCP_NODELAY, or an empty one (errno says
// why). Without it, a status frame sent while the one before is unacknowledged waits
// for the requester's delayed ack: 40 ms at the end of every group.
unique_fd accept_tcp(int listener);

// Blocking full transfers: false on EOF or error (errno says which; 0 for EOF).
bool send_all(int fd, const void* data, std::size_t size);
bool recv_all(int fd, void* data, std::size_t size);

}  // namespace spillway
