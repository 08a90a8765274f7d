// spillway-faultfs mounted by this process: the child started over a backing dir, its
// rules set and their counters read through the control socket (control.hpp), and the
// mount taken down again. The fault tests (tests/faultfs_mount.hpp) and `spillway
// soak` both mount it through this; neither needs a test framework here.
//   faultfs::mount fs{binary, backing, mountpoint, socket};
//   if (!fs.usable()) ... fs.why();
//   const auto rule = fs.add("op=read path=*.bucket fault=eio count=1");
//   ... fs.injected(rule); ... const auto problem = fs.unmount();
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace faultfs {

// Why a spillway-faultfs at `binary` cannot be mounted here ("" when it can): not built
// (an empty path), no usable /dev/fuse, no fusermount3 on PATH.
std::string fuse_unusable(const std::string& binary);

class mount {
public:
  // Mounts, or says why it cannot (usable() false); the dirs must exist.
  mount(const std::string& binary, std::filesystem::path backing,
        std::filesystem::path mountpoint, std::filesystem::path socket);
  ~mount();  // unmount(), its problem dropped: call it first to hear of one
  mount(const mount&) = delete;
  mount& operator=(const mount&) = delete;

  bool usable() const { return pid_ > 0; }
  const std::string& why() const { return why_; }
  const std::filesystem::path& mountpoint() const { return mountpoint_; }
  const std::filesystem::path& backing() const { return backing_; }

  // Adds a rule (rules.hpp); its id. Throws std::runtime_error if refused.
  std::uint64_t add(const std::string& rule);
  void clear();    // every rule gone, frozen operations let go
  void release();  // frozen operations let go
  std::uint64_t injected(std::uint64_t rule);  // times the rule fired
  std::uint64_t held(std::uint64_t rule);      // operations it holds frozen now

  // Lets frozen operations go, unmounts and reaps the child; "" or what went wrong (the
  // control socket dead, the mount busy: a descriptor still open in it). A mount that
  // stays busy is detached anyway. Idempotent.
  std::string unmount();

private:
  std::string command(const std::string& line);  // the answer after "ok"
  std::uint64_t figure(std::uint64_t rule, const std::string& name);
  std::string stop_child();  // what it wrote on stderr since its ready line

  std::filesystem::path backing_, mountpoint_, socket_;
  std::string fusermount_;
  std::string why_;
  pid_t pid_ = -1;
  int stderr_fd_ = -1;
};

}  // namespace faultfs
