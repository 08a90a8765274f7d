#include "tests/faultfs_mount.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <doctest/doctest.h>

#include "tests/eventually.hpp"

namespace spillway::test {
namespace {

constexpr long fuse_super_magic = 0x65735546;

std::string find_on_path(const std::string& name) {
  std::istringstream dirs{::getenv("PATH") ? ::getenv("PATH") : "/usr/bin:/bin"};
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

// Why FUSE cannot be used here, or "".
std::string fuse_unusable() {
  if (std::string{SPILLWAY_FAULTFS_BINARY}.empty())
    return "spillway-faultfs was not built: libfuse3 was not found (libfuse3-dev)";
  const int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::string{"/dev/fuse: "} + std::strerror(errno);
  ::close(fd);
  if (find_on_path("fusermount3").empty()) return "no fusermount3 on PATH (fuse3)";
  return "";
}

}  // namespace

faultfs_mount::faultfs_mount()
    : backing_(dir_.path() / "backing"),
      mountpoint_(dir_.path() / "mnt"),
      socket_(dir_.path() / "control.sock") {
  why_ = fuse_unusable();
  if (!why_.empty()) return;
  fusermount_ = find_on_path("fusermount3");
  std::filesystem::create_directory(backing_);
  std::filesystem::create_directory(mountpoint_);
  auto child = std::make_unique<child_process>(std::vector<std::string>{
    SPILLWAY_FAULTFS_BINARY, "--control", socket_.string(), backing_.string(),
    mountpoint_.string()});
  if (!child->wait_for_stderr("spillway-faultfs ready", std::chrono::seconds(30))) {
    child->send_signal(SIGTERM);
    child->finish();
    why_ = "spillway-faultfs could not mount: " + child->err();
    return;
  }
  struct statfs st{};
  if (::statfs(mountpoint_.c_str(), &st) != 0 || st.f_type != fuse_super_magic) {
    why_ = "spillway-faultfs said ready, but " + mountpoint_.string() + " is no fuse mount";
    child->send_signal(SIGTERM);
    child->finish();
    return;
  }
  child_ = std::move(child);
}

faultfs_mount::~faultfs_mount() {
  if (!child_) return;
  try {
    clear();
  } catch (const std::exception& e) {  // the child died: its stderr says why
    FAIL_CHECK(e.what(), " ", child_->err());
  }
  // A process killed while the mount froze its read lets go of its files only once the
  // kernel has torn its io_uring down, after the release above: asked again until then.
  process_result unmounted;
  test::eventually([&] {
    unmounted = run_command({fusermount_, "-u", mountpoint_.string()});
    return unmounted.exit_code == 0;
  });
  // Busy still: something (a leaked fd) holds the mount. Say so, and detach it anyway.
  CHECK_MESSAGE(unmounted.exit_code == 0, "fusermount3 -u: ", unmounted.err);
  if (unmounted.exit_code != 0) {
    run_command({fusermount_, "-u", "-z", mountpoint_.string()});
    child_->send_signal(SIGTERM);
  }
  child_->finish();
}

std::string faultfs_mount::command(const std::string& line) {
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
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (reply.rfind("ok", 0) != 0) throw std::runtime_error("faultfs '" + line + "': " + reply);
  return reply.substr(reply.size() > 2 ? 3 : 2);
}

std::uint64_t faultfs_mount::add(const std::string& rule) {
  return std::stoull(command("add " + rule));
}
void faultfs_mount::clear() { command("clear"); }
void faultfs_mount::release() { command("release"); }

std::uint64_t faultfs_mount::figure(std::uint64_t rule, const std::string& name) {
  std::istringstream lines{command("stats")};
  const auto head = "rule " + std::to_string(rule) + " ";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(head, 0) != 0) continue;
    const auto at = line.find(" " + name + "=");
    if (at != std::string::npos) return std::stoull(line.substr(at + name.size() + 2));
  }
  throw std::runtime_error("faultfs has no rule " + std::to_string(rule));
}

std::uint64_t faultfs_mount::injected(std::uint64_t rule) { return figure(rule, "injected"); }
std::uint64_t faultfs_mount::held(std::uint64_t rule) { return figure(rule, "held"); }

}  // namespace spillway::test
