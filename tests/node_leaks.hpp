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

#include "runtime/node.hpp"

namespace spillway::test {

// This process's open descriptors.
inline std::size_t open_fds() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& fd : std::filesystem::directory_iterator{"/proc/self/fd"})
    ++count;
  return count;
}

struct node_leaks {
  std::size_t fds_before = open_fds();

  node_leaks() = default;
  node_leaks(const node_leaks&) = delete;
  node_leaks& operator=(const node_leaks&) = delete;
  ~node_leaks() { CHECK_MESSAGE(open_fds() == fds_before, "descriptors the nodes left open"); }

  // No extent is out: every lease came back and the free space is all that is ready.
  static void check_arena(node& n) {
    const auto s = n.read_stats();
    CHECK(s.leases == 0);
    CHECK(s.free_bytes == s.ready_bytes);
  }
};

}  // namespace spillway::test
