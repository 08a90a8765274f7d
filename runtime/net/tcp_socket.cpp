#include "runtime/net/tcp_socket.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace spillway {

namespace {

// The first IPv4/IPv6 address of host:port; nullptr and `error` set when none.
addrinfo* resolve(const std::string& host, std::uint16_t port, int flags, int& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const auto service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) !=
      0) {
    error = EHOSTUNREACH;
    return nullptr;
  }
  return found;
}

void set_option(int fd, int level, int name) {
  const int one = 1;
  ::setsockopt(fd, level, name, &one, sizeof one);
}

}  // namespace

unique_fd connect_tcp(const std::string& host, std::uint16_t port, int& error) {
  addrinfo* found = resolve(host, port, 0, error);
  if (found == nullptr) return {};
  unique_fd fd{::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  const bool connected = fd && ::connect(fd.get(), found->ai_addr, found->ai_addrlen) == 0;
  error = connected ? 0 : errno;
  ::freeaddrinfo(found);
  if (!connected) return {};
  set_option(fd.get(), IPPROTO_TCP, TCP_NODELAY);
  return fd;
}

unique_fd listen_tcp(const std::string& host, std::uint16_t port) {
  int error = 0;
  addrinfo* found = resolve(host, port, AI_PASSIVE, error);
  if (found == nullptr) throw std::system_error(error, std::generic_category(), host);
  unique_fd fd{::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (fd) set_option(fd.get(), SOL_SOCKET, SO_REUSEADDR);
  const bool ok = fd && ::bind(fd.get(), found->ai_addr, found->ai_addrlen) == 0 &&
                  ::listen(fd.get(), 64) == 0;
  error = errno;
  ::freeaddrinfo(found);
  if (!ok)
    throw std::system_error(error, std::generic_category(),
                            "listen on " + host + ":" + std::to_string(port));
  return fd;
}

unique_fd accept_tcp(int listener) {
  unique_fd fd{::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC)};
  if (fd) set_option(fd.get(), IPPROTO_TCP, TCP_NODELAY);
  return fd;
}

std::uint16_t local_port(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

bool send_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = 0;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace spillway
