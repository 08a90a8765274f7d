#include "tests/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace spillway::test {
namespace {

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::array<int, 2> make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) fail("pipe2");
  return fds;
}

}  // namespace

child_process::child_process(const std::vector<std::string>& argv) {
  const auto out = make_pipe();
  const auto err = make_pipe();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (rc != 0) {
    errno = rc;
    fail("posix_spawn");
  }
}

child_process::~child_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool child_process::read_some(std::chrono::milliseconds limit) {
  std::array<pollfd, 2> fds{pollfd{out_fd_, POLLIN, 0}, pollfd{err_fd_, POLLIN, 0}};
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  if (::poll(fds.data(), fds.size(), static_cast<int>(limit.count())) < 0 && errno != EINTR)
    fail("poll");
  std::array<std::pair<int*, std::string*>, 2> streams{{{&out_fd_, &out_}, {&err_fd_, &err_}}};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (*streams[i].first < 0 || fds[i].revents == 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(*streams[i].first, buffer, sizeof buffer);
    if (n > 0) {
      streams[i].second->append(buffer, static_cast<std::size_t>(n));
    } else {
      ::close(*streams[i].first);
      *streams[i].first = -1;
    }
  }
  return true;
}

template <class Done>
bool child_process::read_until(Done done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !read_some(left)) return false;
  }
  return true;
}

bool child_process::wait_for_stderr(std::string_view needle, std::chrono::milliseconds limit) {
  return read_until([&] { return err_.find(needle) != std::string::npos; }, limit);
}

bool child_process::wait_for_stdout(std::string_view needle, std::size_t count,
                                    std::chrono::milliseconds limit) {
  auto occurrences = [&] {
    std::size_t n = 0;
    for (auto at = out_.find(needle); at != std::string::npos; at = out_.find(needle, at + 1))
      ++n;
    return n;
  };
  return read_until([&] { return occurrences() >= count; }, limit);
}

void child_process::send_signal(int signal) {
  if (::kill(pid_, signal) != 0) fail("kill");
}

int child_process::finish() {
  while (read_some(std::chrono::milliseconds{-1})) {
  }
  int status = 0;
  if (::waitpid(pid_, &status, 0) < 0) fail("waitpid");
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

process_result run_spillway(const std::vector<std::string>& args) {
  std::vector<std::string> argv{SPILLWAY_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

process_result run_command(const std::vector<std::string>& argv) {
  child_process child{argv};
  process_result result;
  result.exit_code = child.finish();
  result.out = child.out();
  result.err = child.err();
  return result;
}

}  // namespace spillway::test
