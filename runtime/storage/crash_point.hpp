// Named steps of a commit, of the seal and of recovery where `fault.kill_at` SIGKILLs
// the process, so that the crash tests can stop it at each step on purpose rather than
// hope a random kill lands there. Process-wide, like the crash it stands for: the node
// arms one point before recovery runs, and the blocks that write call reach() at each
// step; an unarmed reach() is one relaxed atomic load.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace spillway {

enum class crash_point {
  commit_written,    // a commit's records written, not yet fdatasynced
  commit_synced,     // ... fdatasynced (and the .tmp's name), not yet published
  commit_published,  // ... published by the catalog, their puts not yet answered
  seal_written,      // the index and footer written, not yet fdatasynced
  seal_synced,       // ... fdatasynced, the .tmp not yet renamed
  seal_renamed,      // ... renamed to .bucket, the directory not yet fsynced
  seal_dir_synced,   // ... the directory fsynced, not yet published
  seal_published,    // ... published by the catalog, its puts not yet answered
  recovery_renamed,  // recovery sealed an unsealed bucket and renamed it, no dir fsync yet
  recovery_set_aside,  // recovery moved a damaged or torn file to quarantine/
  forget_written,    // forget-log entries (removes, evictions) written, not yet fdatasynced
  forget_synced,     // ... fdatasynced, the catalog not yet told, nothing answered
  forget_compacted,  // recovery wrote and synced forget.log.tmp, not yet renamed
  forget_renamed,    // ... renamed to forget.log, the directory not yet fsynced
};
constexpr std::size_t crash_point_count = 14;

// "commit.written", "seal.dir_synced", ...: the names fault.kill_at takes.
std::string_view name_of(crash_point point);
std::optional<crash_point> crash_point_named(std::string_view name);

// The process SIGKILLs itself the `hit`th time (from 1) it reaches `point`.
void arm_crash_point(crash_point point, std::uint64_t hit);
void reach(crash_point point);

}  // namespace spillway
