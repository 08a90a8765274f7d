#include "runtime/storage/recovery.hpp"

#include <algorithm>
#include <system_error>

#include <spdlog/spdlog.h>

namespace spillway {
namespace {

constexpr const char* quarantine_dir = "quarantine";

// A file's verdict; an empty reason means it is a whole, sealed bucket.
std::string check_file(const std::filesystem::path& path, std::uint64_t id_in_name,
                       bucket_index& index) {
  if (path.extension() == ".tmp") return "never sealed (.tmp)";
  if (auto problem = read_bucket_index(path, index); !problem.empty()) return problem.what;
  if (index.header.bucket_id != id_in_name) return "header names another bucket id";
  return {};
}

void set_aside(const rejected_file& file, const std::filesystem::path& dir, bool quarantine) {
  std::error_code ec;
  if (quarantine) {
    std::filesystem::create_directories(dir / quarantine_dir, ec);
    if (!ec) std::filesystem::rename(file.path, dir / quarantine_dir / file.path.filename(), ec);
  } else {
    std::filesystem::remove(file.path, ec);
  }
  const std::string failed = ec ? " (and that failed: " + ec.message() + ")" : "";
  spdlog::warn("recovery: {} {}: {}{}", quarantine ? "quarantined" : "removed",
               file.path.string(), file.reason, failed);
}

recovered_store scan(const std::filesystem::path& dir) {
  recovered_store store;
  for (const auto& entry : std::filesystem::directory_iterator{dir}) {
    if (!entry.is_regular_file()) continue;
    const auto id = parse_bucket_file_name(entry.path().filename().string());
    if (!id) continue;
    store.highest_sequence = std::max(store.highest_sequence, bucket_sequence(*id));
    recovered_bucket bucket{entry.path(), {}};
    if (auto reason = check_file(entry.path(), *id, bucket.index); !reason.empty())
      store.rejected.push_back({entry.path(), std::move(reason)});
    else
      store.buckets.push_back(std::move(bucket));
  }
  std::sort(store.buckets.begin(), store.buckets.end(), [](const auto& a, const auto& b) {
    return a.index.header.bucket_id < b.index.header.bucket_id;
  });
  return store;
}

}  // namespace

recovered_store scan_data_dir(const std::filesystem::path& dir) { return scan(dir); }

recovered_store recover_data_dir(const std::filesystem::path& dir, bool quarantine) {
  auto store = scan(dir);
  for (const auto& file : store.rejected) set_aside(file, dir, quarantine);
  // Quarantined names count too: an id must never be handed out twice.
  std::error_code ec;
  if (std::filesystem::is_directory(dir / quarantine_dir, ec))
    for (const auto& entry : std::filesystem::directory_iterator{dir / quarantine_dir})
      if (auto id = parse_bucket_file_name(entry.path().filename().string()))
        store.highest_sequence = std::max(store.highest_sequence, bucket_sequence(*id));
  return store;
}

}  // namespace spillway
