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
#include <vector>

#include "runtime/node.hpp"

namespace spillway::test {

// This process's open descriptors, each as "4 -> socket:[1234]" (the listing's own
// directory descriptor among them, at every count alike).
inline std::vector<std::string> open_fds() {
  std::vector<std::string> fds;
  for (const auto& fd : std::filesystem::directory_iterator{"/proc/self/fd"}) {
    std::error_code unreadable;  // the listing's own descriptor may be gone by now
    const auto target = std::filesystem::read_symlink(fd.path(), unreadable);
    fds.push_back(fd.path().filename().string() + " -> " + target.string());
  }
  return fds;
}

inline std::string one_per_line(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& line : lines) all += line + "\n";
  return all;
}

struct node_leaks {
  std::vector<std::string> fds_before = open_fds();

  node_leaks() = default;
  node_leaks(const node_leaks&) = delete;
  node_leaks& operator=(const node_leaks&) = delete;
  ~node_leaks() {
    const auto fds = open_fds();
    CHECK_MESSAGE(fds.size() == fds_before.size(), "descriptors the nodes left open; before:\n"
                                                     << one_per_line(fds_before) << "after:\n"
                                                     << one_per_line(fds));
  }

  // No extent is out: every lease came back and the free space is all that is ready.
  static void check_arena(node& n) {
    const auto s = n.read_stats();
    CHECK(s.leases == 0);
    CHECK(s.free_bytes == s.ready_bytes);
  }
};

}  // namespace spillway::test
