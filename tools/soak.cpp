// `spillway soak`: the seeded chaos soak (DESIGN.md "Faults the runtime must survive").
// Mounts the fault filesystem in a temp dir when it can, runs the schedule of a seed
// (soak_schedule.hpp) on an in-process node (soak_runner.hpp) until --ops operations or
// --seconds pass, stops at the first operation with a finding, and checks at the end
// that nothing leaked: no arena extent lent, no descriptor open, the mount not busy.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include "tools/commands.hpp"
#include "tools/faultfs/mount.hpp"
#include "tools/soak_runner.hpp"

namespace spillway {
namespace {

// This process's open descriptors, each with what it is (a path, socket:[N], ...).
std::set<std::string> open_fds() {
  std::set<std::string> fds;
  for (const auto& fd : std::filesystem::directory_iterator{"/proc/self/fd"}) {
    std::error_code gone;  // the iterator's own descriptor, closed by now
    const auto target = std::filesystem::read_symlink(fd.path(), gone);
    if (!gone) fds.insert(fd.path().filename().string() + " " + target.string());
  }
  return fds;
}

// The soak's own dir, gone with everything in it when the soak ends.
struct scratch_dir {
  std::filesystem::path path;
  explicit scratch_dir(const std::filesystem::path& under) {
    std::string pattern = (under / "spillway-soak-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    path = pattern;
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// spillway-faultfs is built beside the spillway binary.
std::string faultfs_binary() {
  const auto beside = std::filesystem::read_symlink("/proc/self/exe").parent_path() /
                      "spillway-faultfs";
  return std::filesystem::exists(beside) ? beside.string() : "";
}

std::unique_ptr<faultfs::mount> mount_in(const std::filesystem::path& dir) {
  std::filesystem::create_directory(dir / "backing");
  std::filesystem::create_directory(dir / "mnt");
  auto fs = std::make_unique<faultfs::mount>(faultfs_binary(), dir / "backing", dir / "mnt",
                                             dir / "control.sock");
  if (fs->usable()) return fs;
  std::cout << "soak: running without the fault filesystem's families (read_eio, read_short, "
               "read_delay, write_enospc, sync_eio, direct_einval): "
            << fs->why() << "\n";
  return nullptr;
}

void print_tally(const soak::tally& t) {
  std::cout << "soak: faults seen: evicted_keys=" << t.evicted_keys
            << " forget_entries=" << t.forget_entries
            << " forget_records_dropped=" << t.forget_records_dropped
            << " reader_restarts=" << t.reader_restarts << " ring_resets=" << t.ring_resets
            << " registration_failures=" << t.registration_failures
            << " o_direct_refusals=" << t.o_direct_refusals << " fs_injected=" << t.fs_injected
            << " lanes_lost=" << t.lanes_lost << " slices_retried=" << t.slices_retried
            << " peer_kills=" << t.peer_kills << "\n";
}

}  // namespace

int run_soak(const soak_options& options) {
  const auto seed = options.seed ? *options.seed : std::random_device{}();
  std::cout << "soak: seed " << seed << std::endl;
  std::vector<std::string> findings;
  std::uint64_t done = 0;
  const auto fds_before = open_fds();
  const auto began = std::chrono::steady_clock::now();
  {
    scratch_dir dir{options.dir};
    auto fs = mount_in(dir.path);
    {
      soak::runner runner{dir.path, (fs ? fs->mountpoint() : dir.path) / "data", fs.get(),
                           options.node_log};
      soak::schedule schedule{seed};
      std::ofstream log;
      if (!options.log.empty()) log.open(options.log);
      const auto deadline = began + std::chrono::seconds(options.seconds);
      while (findings.empty() && (options.ops == 0 || done < options.ops) &&
             (done == 0 || std::chrono::steady_clock::now() < deadline)) {
        const auto o = schedule.next();
        if (log.is_open()) log << soak::describe(o) << '\n' << std::flush;
        for (auto& f : runner.run(o))
          findings.push_back("op " + std::to_string(o.index) + ": " + f);
        ++done;
      }
      for (auto& f : runner.finish()) findings.push_back("at the end: " + f);
      print_tally(runner.faults_seen());
    }
    if (fs)
      if (auto problem = fs->unmount(); !problem.empty())
        findings.push_back("the fault filesystem would not unmount: " + problem);
  }
  for (const auto& fd : open_fds())
    if (!fds_before.count(fd)) findings.push_back("descriptor left open: " + fd);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
  std::cout << "soak: " << done << " operations in " << took.count() << " s, seed " << seed
            << ", " << findings.size() << " findings\n";
  for (const auto& f : findings) std::cout << "soak: FINDING " << f << "\n";
  if (findings.empty()) return 0;
  std::cout << "soak: replay with: spillway soak --seed " << seed << " --ops " << done << "\n";
  return 1;
}

}  // namespace spillway
