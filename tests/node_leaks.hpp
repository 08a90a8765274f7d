// What every test that starts a node checks after its faults (DESIGN.md "Faults the
// runtime must survive"): the arena lent nothing it did not get back, and once the
// test's nodes are gone the process holds exactly the descriptors it held before.
//   TEST_CASE_FIXTURE(test::node_leaks, "...") { node n{...}; ...; check_arena(n); }
// The descriptors are counted when the fixture is built and checked when it goes, after
// the test's own locals (its nodes among them) are destroyed.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>

#include "runtime/node.hpp"

namespace spillway::test {

// This process's open descriptors.
inline std::size_t open_fds() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& fd : std::filesystem::directory_iterator{"/proc/self/fd"})
    ++count;
  return count;
}

// What each open descriptor is ("4 -> socket:[1234]"), for the message of a leak.
inline std::string open_fd_targets() {
  std::string all;
  for (const auto& fd : std::filesystem::directory_iterator{"/proc/self/fd"}) {
    std::error_code unreadable;  // the iterator's own descriptor is gone by now
    const auto target = std::filesystem::read_symlink(fd.path(), unreadable);
    all += fd.path().filename().string() + " -> " + target.string() + "\n";
  }
  return all;
}

struct node_leaks {
  std::size_t fds_before = open_fds();
  std::string targets_before = open_fd_targets();

  node_leaks() = default;
  node_leaks(const node_leaks&) = delete;
  node_leaks& operator=(const node_leaks&) = delete;
  ~node_leaks() {
    const auto now = open_fds();
    CHECK_MESSAGE(now == fds_before, "descriptors the nodes left open; before:\n"
                                       << targets_before << "after:\n" << open_fd_targets());
  }

  // No extent is out: every lease came back and the free space is all that is ready.
  static void check_arena(node& n) {
    const auto s = n.read_stats();
    CHECK(s.leases == 0);
    CHECK(s.free_bytes == s.ready_bytes);
  }
};

}  // namespace spillway::test
