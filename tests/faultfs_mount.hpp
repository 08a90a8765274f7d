// The fault filesystem (tools/faultfs) mounted for one test: faultfs::mount
// (tools/faultfs/mount.hpp) over a backing dir in a fresh temp dir, unmounted when the
// object goes, which fails the test if the mount could not be taken down cleanly (a
// descriptor left open in it).
//   test::faultfs_mount fs;
//   if (!fs.usable()) return test::skip_test(fs.why());
//   const auto rule = fs.add("op=read path=*.bucket fault=eio count=1");
//   ... CHECK(fs.injected(rule) == 1);
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "tests/temp_dir.hpp"
#include "tools/faultfs/mount.hpp"

namespace spillway::test {

class faultfs_mount {
public:
  faultfs_mount();   // mounts, or says why it cannot
  ~faultfs_mount();  // lets frozen operations go, unmounts, reaps the child
  faultfs_mount(const faultfs_mount&) = delete;
  faultfs_mount& operator=(const faultfs_mount&) = delete;

  bool usable() const { return mount_->usable(); }
  const std::string& why() const { return mount_->why(); }

  const std::filesystem::path& mountpoint() const { return mount_->mountpoint(); }
  // The same files, reached without going through the mount (and its faults).
  const std::filesystem::path& backing() const { return mount_->backing(); }

  // Adds a rule (tools/faultfs/rules.hpp); its id. Throws std::runtime_error if refused.
  std::uint64_t add(const std::string& rule) { return mount_->add(rule); }
  void clear() { mount_->clear(); }      // every rule gone, frozen operations let go
  void release() { mount_->release(); }  // frozen operations let go
  std::uint64_t injected(std::uint64_t rule) { return mount_->injected(rule); }
  std::uint64_t held(std::uint64_t rule) { return mount_->held(rule); }

private:
  temp_dir dir_;
  std::optional<faultfs::mount> mount_;
};

}  // namespace spillway::test
