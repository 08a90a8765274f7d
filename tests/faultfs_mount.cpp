#include "tests/faultfs_mount.hpp"

#include <doctest/doctest.h>

namespace spillway::test {

faultfs_mount::faultfs_mount() {
  std::filesystem::create_directory(dir_.path() / "backing");
  std::filesystem::create_directory(dir_.path() / "mnt");
  mount_.emplace(SPILLWAY_FAULTFS_BINARY, dir_.path() / "backing", dir_.path() / "mnt",
                 dir_.path() / "control.sock");
}

faultfs_mount::~faultfs_mount() {
  const auto problem = mount_->unmount();
  CHECK_MESSAGE(problem.empty(), problem);
}

}  // namespace spillway::test
