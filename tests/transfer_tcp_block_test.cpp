// The tcp blocks (runtime/net) under a process's own limits: a lane whose poll fails
// says why, a server out of descriptors waits instead of spinning. Each case lowers
// RLIMIT_NOFILE in a forked child, where nothing else of the test runs, and the child's
// exit code is its verdict.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/net/slice_pool.hpp"
#include "runtime/net/tcp_lane.hpp"
#include "runtime/net/tcp_server.hpp"

namespace spillway {
namespace {

constexpr unsigned child_limit_s = 20;  // SIGALRM ends a child that hangs

// Runs `verdict` in a forked child; its return value (0-255) or -1 when it died.
int in_child(const std::function<int()>& verdict) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(child_limit_s);
    ::_exit(verdict());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void limit_descriptors(rlim_t count) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = count;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

struct served_segment {
  std::vector<std::byte> memory = std::vector<std::byte>(4096);
  std::shared_ptr<segment_table> segments = std::make_shared<segment_table>();
  std::uint64_t id = segments->add(memory.data(), memory.size()).id;
};

// One 16-byte write to the segment through `lane`: the slice's status.
transfer_status write_once(tcp_lane& lane, std::uint64_t segment) {
  std::byte bytes[16]{};
  slice_pool pool{1, 1};
  auto* group = pool.take();
  auto& s = group->append();
  s = {transfer_op::write, 1, {}, sizeof bytes, 0, bytes, segment, 0};
  lane.run(*group);
  return s.status;
}

TEST_SUITE("transfer-tcp") {

// poll() fails with EINVAL when its one descriptor is over RLIMIT_NOFILE (0 here).
TEST_CASE("a lane whose poll fails reports poll's errno") {
  served_segment owner;
  tcp_server server{owner.segments, "127.0.0.1", 0, {}};
  const int lane_errno = in_child([&] {
    tcp_lane lane{"127.0.0.1", server.port(), std::chrono::seconds(5)};
    if (!write_once(lane, owner.id).ok()) return 255;  // connected and moved
    limit_descriptors(0);
    const auto failed = write_once(lane, owner.id);
    return failed.error == transfer_error::lane_closed ? failed.sys_errno : 254;
  });
  CHECK(lane_errno == EINVAL);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
