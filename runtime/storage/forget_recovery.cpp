#include "runtime/storage/forget_recovery.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "runtime/storage/forget_log_writer.hpp"
#include "runtime/storage/printable_key.hpp"

namespace spillway {
namespace {

using bounds = std::unordered_map<std::string, record_position>;

// The latest bound of each key: it kills all that the earlier ones did.
bounds latest_bounds(const std::vector<forget_entry>& entries, recovered_store& store) {
  bounds latest;
  for (const auto& e : entries) {
    auto [it, fresh] = latest.try_emplace(e.key, e.bound);
    if (!fresh) it->second = std::max(it->second, e.bound);
    store.highest_sequence = std::max(store.highest_sequence, bucket_sequence(e.bound.bucket_id));
  }
  return latest;
}

// Drops the records the bounds kill, counting them; returns the keys that had one.
std::unordered_set<std::string> drop_dead(const bounds& latest, recovered_store& store,
                                          std::uint64_t& dropped) {
  std::unordered_set<std::string> killed;
  for (auto& b : store.buckets) {
    const auto id = b.index.header.bucket_id;
    std::erase_if(b.index.entries, [&](const bucket_format::index_entry& e) {
      const auto it = latest.find(e.key);
      if (it == latest.end() || !(record_position{id, e.offset} < it->second)) return false;
      killed.insert(e.key);
      ++dropped;
      return true;
    });
  }
  return killed;
}

// Entries worth keeping: those that killed a record still on disk, and those that may
// concern a bucket file left unread (it may be read at the next start).
std::vector<forget_entry> still_needed(const bounds& latest,
                                       const std::unordered_set<std::string>& killed,
                                       const recovered_store& store) {
  std::uint64_t first_unread = UINT64_MAX;
  for (const auto& f : store.unreadable)
    if (const auto id = parse_bucket_file_name(f.path.filename().string()))
      first_unread = std::min(first_unread, *id);
  std::vector<forget_entry> kept;
  for (const auto& [key, bound] : latest)
    if (killed.count(key) || bound.bucket_id >= first_unread) kept.push_back({key, bound});
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return kept;
}

void report(const forget_log_contents& log) {
  for (const auto& d : log.damaged)
    spdlog::error("recovery: {}: {} bytes at offset {} skipped: {}; the records its entries "
                  "killed may be served again",
                  forget_log_name, d.length, d.offset, d.what);
  if (log.torn_bytes != 0)
    spdlog::warn("recovery: {}: a torn append of {} bytes after the last whole entry dropped "
                 "(never acknowledged)",
                 forget_log_name, log.torn_bytes);
}

std::uint64_t encoded_size(const std::vector<forget_entry>& entries) {
  std::uint64_t n = forget_format::header_size;
  for (const auto& e : entries) n += forget_format::entry_header_size + e.key.size();
  return n;
}

}  // namespace

void apply_forget_log(const std::filesystem::path& dir, recovered_store& store, bool compact,
                      mode_t file_mode) {
  const auto log = read_forget_log(dir);
  if (!log.unreadable.empty())
    throw forget_log_unreadable(log.unreadable +
                                ": it says which records were removed or evicted, so none is "
                                "served without it (remove it to serve them all again)");
  report(log);
  auto& out = store.forget;
  out.file_bytes = log.file_bytes;
  out.entries_read = log.entries.size();
  out.torn_bytes = log.torn_bytes;
  out.damaged = log.damaged;
  out.append_at = log.valid_end;
  const auto latest = latest_bounds(log.entries, store);
  const auto killed = drop_dead(latest, store, out.records_dropped);
  const auto kept = still_needed(latest, killed, store);
  out.entries_kept = kept.size();
  const bool changed =
    kept.size() != log.entries.size() || !log.damaged.empty() || log.torn_bytes != 0;
  if (!compact || !log.exists || !changed) return;
  if (auto failed = rewrite_forget_log(dir, kept, file_mode)) {
    spdlog::warn("recovery: {} not compacted, appended to as it is: {}", forget_log_name,
                 failed->what);
    return;
  }
  out.rewritten = true;
  out.append_at = encoded_size(kept);
}

}  // namespace spillway
