#include "tools/faultfs/mount.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace faultfs {
namespace {

constexpr long fuse_super_magic = 0x65735546;
// A bound for a child that hangs, not a synchronisation: mounting takes milliseconds.
constexpr auto mount_limit = std::chrono::seconds(30);

std::string find_on_path(const std::string& name) {
  std::istringstream dirs{::getenv("PATH") ? ::getenv("PATH") : "/usr/bin:/bin"};
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

// Starts argv with stdin and stdout on /dev/null and stderr into a pipe; its pid, and
// the pipe's read end in `err_fd`.
pid_t spawn(const std::vector<std::string>& argv, int& err_fd) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(err[1]);
  err_fd = err[0];
  if (rc != 0) {
    ::close(err_fd);
    err_fd = -1;
    throw std::runtime_error(argv[0] + ": " + std::strerror(rc));
  }
  return pid;
}

// Appends what `fd` has to `out` until `done(out)`, the writer closes it or `limit`
// passes; whether `done` came true.
template <class Done>
bool read_until(int fd, std::string& out, Done done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done(out)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return done(out);
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

int reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs argv to its end; its exit code, its stderr in `err`.
int run(const std::vector<std::string>& argv, std::string& err) {
  int fd = -1;
  const pid_t pid = spawn(argv, fd);
  read_until(fd, err, [](const std::string&) { return false; }, mount_limit);
  ::close(fd);
  return reap(pid);
}

}  // namespace

std::string fuse_unusable(const std::string& binary) {
  if (binary.empty())
    return "spillway-faultfs was not built: libfuse3 was not found (libfuse3-dev)";
  if (::access(binary.c_str(), X_OK) != 0) return binary + ": " + std::strerror(errno);
  const int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::string{"/dev/fuse: "} + std::strerror(errno);
  ::close(fd);
  if (find_on_path("fusermount3").empty()) return "no fusermount3 on PATH (fuse3)";
  return "";
}

mount::mount(const std::string& binary, std::filesystem::path backing,
             std::filesystem::path mountpoint, std::filesystem::path socket)
    : backing_(std::move(backing)), mountpoint_(std::move(mountpoint)), socket_(std::move(socket)) {
  why_ = fuse_unusable(binary);
  if (!why_.empty()) return;
  fusermount_ = find_on_path("fusermount3");
  pid_ = spawn({binary, "--control", socket_.string(), backing_.string(), mountpoint_.string()},
               stderr_fd_);
  std::string said;
  const bool ready = read_until(
    stderr_fd_, said,
    [](const std::string& s) { return s.find("spillway-faultfs ready") != std::string::npos; },
    mount_limit);
  struct statfs st{};
  if (!ready)
    why_ = "spillway-faultfs could not mount: " + said;
  else if (::statfs(mountpoint_.c_str(), &st) != 0 || st.f_type != fuse_super_magic)
    why_ = "spillway-faultfs said ready, but " + mountpoint_.string() + " is no fuse mount";
  if (why_.empty()) return;
  ::kill(pid_, SIGTERM);
  stop_child();
}

mount::~mount() { unmount(); }

std::string mount::stop_child() {
  std::string said;
  read_until(stderr_fd_, said, [](const std::string&) { return false; }, mount_limit);
  ::close(stderr_fd_);
  stderr_fd_ = -1;
  reap(pid_);
  pid_ = -1;
  return said;
}

std::string mount::unmount() {
  if (!usable()) return "";
  std::string problem;
  try {
    clear();
  } catch (const std::exception& e) {  // the child died: its stderr says why
    problem = e.what();
  }
  // A process killed while the mount froze its read lets go of its files only once the
  // kernel has torn its io_uring down, after the release above: asked again until then.
  const auto deadline = std::chrono::steady_clock::now() + mount_limit;
  std::string err;
  while (run({fusermount_, "-u", mountpoint_.string()}, err) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      // Busy still: something (a leaked fd) holds the mount. Say so, and detach it anyway.
      problem += (problem.empty() ? "" : "; ") + std::string{"fusermount3 -u: "} + err;
      std::string ignored;
      run({fusermount_, "-u", "-z", mountpoint_.string()}, ignored);
      ::kill(pid_, SIGTERM);
      break;
    }
    err.clear();
    std::this_thread::yield();
  }
  const auto said = stop_child();
  return problem.empty() ? "" : problem + " " + said;
}

std::string mount::command(const std::string& line) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_.c_str(), sizeof address.sun_path - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("faultfs control socket: " + std::string{std::strerror(errno)});
  }
  const auto request = line + "\n";
  (void)!::write(fd, request.data(), request.size());
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (reply.rfind("ok", 0) != 0) throw std::runtime_error("faultfs '" + line + "': " + reply);
  return reply.substr(reply.size() > 2 ? 3 : 2);
}

std::uint64_t mount::add(const std::string& rule) { return std::stoull(command("add " + rule)); }
void mount::clear() { command("clear"); }
void mount::release() { command("release"); }

std::uint64_t mount::figure(std::uint64_t rule, const std::string& name) {
  std::istringstream lines{command("stats")};
  const auto head = "rule " + std::to_string(rule) + " ";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(head, 0) != 0) continue;
    const auto at = line.find(" " + name + "=");
    if (at != std::string::npos) return std::stoull(line.substr(at + name.size() + 2));
  }
  throw std::runtime_error("faultfs has no rule " + std::to_string(rule));
}

std::uint64_t mount::injected(std::uint64_t rule) { return figure(rule, "injected"); }
std::uint64_t mount::held(std::uint64_t rule) { return figure(rule, "held"); }

}  // namespace faultfs
