#include "runtime/storage/recovery.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <system_error>

#include <spdlog/spdlog.h>

#include "runtime/storage/crash_point.hpp"
#include "runtime/storage/forget_recovery.hpp"
#include "runtime/storage/unsealed_bucket.hpp"

namespace spillway {
namespace {

namespace fs = std::filesystem;

constexpr const char* quarantine_dir = "quarantine";

// A file's verdict; an empty one means it is a whole, sealed bucket. The type is the
// directory entry's own (lstat), so a symlink or a FIFO is never opened here, and
// read_bucket_index refuses one swapped in since.
bucket_problem check_file(const fs::directory_entry& entry, std::uint64_t id_in_name,
                          bucket_index& index) {
  std::error_code ec;
  const auto type = entry.symlink_status(ec).type();
  if (type == fs::file_type::symlink) return {"a symlink, which is not followed", false};
  if (type != fs::file_type::regular) return {"not a regular file", false};
  if (entry.path().extension() == ".tmp") return {"never sealed (.tmp)", true};
  if (auto problem = read_bucket_index(entry.path(), index); !problem.empty()) return problem;
  if (index.header.bucket_id != id_in_name) return {"header names another bucket id", true};
  return {};
}

// quarantine/ as a directory of the node's own: created with `mode`, and never through
// a symlink, which would send damaged files, and the values in them, where it points.
std::error_code make_quarantine(const fs::path& dir, mode_t mode) {
  const auto path = dir / quarantine_dir;
  if (::mkdir(path.c_str(), mode) == 0) return {};
  if (errno != EEXIST) return {errno, std::system_category()};
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return {errno, std::system_category()};
  return S_ISDIR(st.st_mode) ? std::error_code{} : std::make_error_code(std::errc::not_a_directory);
}

void set_aside(const rejected_file& file, const fs::path& dir, const recovery_options& options) {
  std::error_code ec;
  if (options.quarantine) {
    ec = make_quarantine(dir, options.dir_mode);
    if (!ec) fs::rename(file.path, dir / quarantine_dir / file.path.filename(), ec);
  } else {
    fs::remove(file.path, ec);
  }
  const std::string failed = ec ? " (and that failed: " + ec.message() + ")" : "";
  spdlog::warn("recovery: {} {}: {}{}", options.quarantine ? "quarantined" : "removed",
               file.path.string(), file.reason, failed);
  reach(crash_point::recovery_set_aside);
}

struct quarantined_file {
  fs::path path;
  std::uint64_t sequence = 0;
  std::uint64_t size = 0;
};

// The files the node put in quarantine/, oldest first. Their names count towards
// highest_sequence: an id must never be handed out twice.
std::vector<quarantined_file> list_quarantine(const fs::path& dir, recovered_store& store) {
  std::vector<quarantined_file> files;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir / quarantine_dir, ec))) return files;
  for (const auto& entry : fs::directory_iterator{dir / quarantine_dir, ec}) {
    const auto id = parse_bucket_file_name(entry.path().filename().string());
    if (!id) continue;
    store.highest_sequence = std::max(store.highest_sequence, bucket_sequence(*id));
    if (!fs::is_regular_file(entry.symlink_status(ec))) continue;
    const auto size = entry.file_size(ec);
    files.push_back({entry.path(), bucket_sequence(*id), ec ? 0 : size});
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
  return files;
}

// Removes quarantined files, oldest first, until they and the buckets fit the quota.
void trim_quarantine(const fs::path& dir, std::uint64_t quota_bytes, recovered_store& store) {
  const auto files = list_quarantine(dir, store);
  std::uint64_t bucket_bytes = 0;
  for (const auto& b : store.buckets) bucket_bytes += b.index.file_size;
  for (const auto& f : files) store.quarantine_bytes += f.size;
  for (const auto& f : files) {
    if (bucket_bytes + store.quarantine_bytes <= quota_bytes) break;
    std::error_code ec;
    if (!fs::remove(f.path, ec)) continue;
    store.quarantine_bytes -= f.size;
    spdlog::info("recovery: removed {} from quarantine: over the quota", f.path.string());
  }
}

void sort_by_id(std::vector<recovered_bucket>& buckets) {
  std::sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) {
    return a.index.header.bucket_id < b.index.header.bucket_id;
  });
}

// Counted in a pass of its own, so that `shown` knows the total while the scan still
// reads the directory as it goes (it holds a descriptor only for the directory).
recovered_store scan(const fs::path& dir, progress* shown) {
  recovered_store store;
  if (shown)
    shown->set_total(static_cast<std::uint64_t>(std::distance(fs::directory_iterator{dir}, {})));
  for (const auto& entry : fs::directory_iterator{dir}) {
    if (shown) shown->advance(1);
    const auto id = parse_bucket_file_name(entry.path().filename().string());
    if (!id) continue;
    store.highest_sequence = std::max(store.highest_sequence, bucket_sequence(*id));
    recovered_bucket bucket{entry.path(), {}};
    auto problem = check_file(entry, *id, bucket.index);
    if (problem.empty())
      store.buckets.push_back(std::move(bucket));
    else
      (problem.damaged ? store.rejected : store.unreadable)
        .push_back({entry.path(), std::move(problem.what)});
  }
  sort_by_id(store.buckets);
  return store;
}

// Seals each regular .tmp file from its whole records; those without any stay rejected.
void complete_unsealed(recovered_store& store) {
  std::vector<rejected_file> rejected;
  for (auto& file : store.rejected) {
    const auto id = parse_bucket_file_name(file.path.filename().string());
    if (file.path.extension() != ".tmp" || !fs::is_regular_file(fs::symlink_status(file.path))) {
      rejected.push_back(std::move(file));
      continue;
    }
    completed_bucket done;
    auto problem = complete_unsealed_bucket(file.path, *id, done);
    if (!problem.empty()) {
      (problem.damaged ? rejected : store.unreadable).push_back({file.path, problem.what});
      continue;
    }
    auto note = std::to_string(done.index.entries.size()) + " whole records kept";
    if (!done.cut.empty())
      note += ", " + std::to_string(done.cut_bytes) + " bytes after them cut: " + done.cut;
    spdlog::warn("recovery: completed unsealed {} as {}: {}", file.path.string(),
                 done.path.filename().string(), note);
    store.completed.push_back({file.path, std::move(note)});
    store.buckets.push_back({done.path, std::move(done.index)});
  }
  store.rejected = std::move(rejected);
  sort_by_id(store.buckets);
}

}  // namespace

recovered_store scan_data_dir(const fs::path& dir) {
  auto store = scan(dir, nullptr);
  apply_forget_log(dir, store, false, 0);
  return store;
}

recovered_store recover_data_dir(const fs::path& dir, const recovery_options& options) {
  auto store = scan(dir, options.shown);
  complete_unsealed(store);
  for (const auto& file : store.rejected) set_aside(file, dir, options);
  for (const auto& file : store.unreadable)
    spdlog::warn("recovery: left {} in place, not served: {}", file.path.string(), file.reason);
  apply_forget_log(dir, store, true, options.file_mode);
  trim_quarantine(dir, options.quota_bytes, store);
  return store;
}

}  // namespace spillway
