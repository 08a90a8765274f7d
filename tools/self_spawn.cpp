#include "tools/self_spawn.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <stdexcept>

extern char** environ;

namespace spillway::bench {

pid_t spawn_self(const std::vector<std::string>& args, unique_fd& stderr_read) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  stderr_read.reset(out[0]);
  unique_fd child_stderr{out[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_stderr.get(), 2);
  std::vector<std::string> copies{"/proc/self/exe"};
  copies.insert(copies.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  // child_stderr goes here: the child holds the only write end, so its exit ends our reads.
  if (rc != 0) throw std::runtime_error("cannot start spillway " + args.at(0));
  return pid;
}

std::string read_line(int fd) {
  std::string line;
  for (char c = 0; line.empty() || line.back() != '\n';) {
    if (::read(fd, &c, 1) != 1) break;
    line.push_back(c);
  }
  return line;
}

}  // namespace spillway::bench
