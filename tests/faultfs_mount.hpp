// The fault filesystem (tools/faultfs) mounted for one test: a child spillway-faultfs
// over a backing dir in a fresh temp dir, rules set and their counters read through its
// control socket, unmounted (fusermount3 -u) and reaped when the object goes.
//   test::faultfs_mount fs;
//   if (!fs.usable()) return test::skip_test(fs.why());
//   const auto rule = fs.add("op=read path=*.bucket fault=eio count=1");
//   ... CHECK(fs.injected(rule) == 1);
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway::test {

class faultfs_mount {
public:
  faultfs_mount();   // mounts, or says why it cannot
  ~faultfs_mount();  // lets frozen operations go, unmounts, reaps the child
  faultfs_mount(const faultfs_mount&) = delete;
  faultfs_mount& operator=(const faultfs_mount&) = delete;

  bool usable() const { return child_ != nullptr; }
  const std::string& why() const { return why_; }

  const std::filesystem::path& mountpoint() const { return mountpoint_; }
  // The same files, reached without going through the mount (and its faults).
  const std::filesystem::path& backing() const { return backing_; }

  // Adds a rule (tools/faultfs/rules.hpp); its id. Throws std::runtime_error if refused.
  std::uint64_t add(const std::string& rule);
  void clear();    // every rule gone, frozen operations let go
  void release();  // frozen operations let go
  std::uint64_t injected(std::uint64_t rule);  // times the rule fired
  std::uint64_t held(std::uint64_t rule);      // operations it holds frozen now

private:
  std::string command(const std::string& line);  // the answer after "ok"
  std::uint64_t figure(std::uint64_t rule, const std::string& name);

  temp_dir dir_;
  std::filesystem::path backing_, mountpoint_, socket_;
  std::string fusermount_;
  std::string why_;
  std::unique_ptr<child_process> child_;
};

}  // namespace spillway::test
