#include "tools/faultfs/control.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace faultfs {
namespace {

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// One line from a connection: a client sends it whole, then waits for the answer.
std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (line.size() < 4096 && ::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

}  // namespace

control_server::control_server(const std::string& path, rule_book& rules)
    : path_(path), rules_(rules) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    errno = ENAMETOOLONG;
    fail("control socket path");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail("socket");
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    fail("bind control socket");
  if (::listen(listen_fd_, 16) != 0) fail("listen");
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) fail("pipe2");
  thread_ = std::thread{[this] { serve(); }};
}

control_server::~control_server() {
  (void)!::write(stop_pipe_[1], "x", 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
  ::unlink(path_.c_str());
}

void control_server::serve() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  while (true) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const auto reply = answer(read_line(client)) + "\n";
    (void)!::write(client, reply.data(), reply.size());
    ::close(client);
  }
}

std::string control_server::answer(const std::string& line) {
  if (line.rfind("add ", 0) == 0) {
    std::string why;
    const auto id = rules_.add(line.substr(4), why);
    return id != 0 ? "ok " + std::to_string(id) : "error " + why;
  }
  if (line == "clear") return rules_.clear(), "ok";
  if (line == "release") return rules_.release(), "ok";
  if (line == "stats") return "ok\n" + rules_.report();
  return "error unknown command '" + line + "'";
}

}  // namespace faultfs
