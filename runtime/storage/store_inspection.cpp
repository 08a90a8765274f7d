#include "runtime/storage/store_inspection.hpp"

#include <fcntl.h>

#include <cerrno>
#include <unordered_map>

#include "runtime/storage/record_reader.hpp"
#include "runtime/storage/recovery.hpp"
#include "runtime/storage/regular_file.hpp"
#include "runtime/io/unique_fd.hpp"

namespace spillway {
namespace {

void verify_bucket(const recovered_bucket& bucket, store_inspection& out) {
  const unique_fd fd{open_regular_file(bucket.path, O_RDONLY | O_CLOEXEC)};
  if (!fd) {
    out.bad_records.push_back({bucket.path.filename(), "", 0, open_error_text(errno)});
    return;
  }
  std::string value;
  std::string problem;
  for (const auto& e : bucket.index.entries)
    if (!read_record(fd.get(), bucket.index.header.bucket_id, bucket.index.header.format_version,
                     e, value, problem)
           .ok())
      out.bad_records.push_back({bucket.path.filename(), e.key, e.offset, problem});
}

}  // namespace

store_inspection inspect_store(const std::filesystem::path& data_dir, bool verify,
                               progress* shown) {
  store_inspection out;
  const auto store = scan_data_dir(data_dir);
  if (shown) shown->set_total(store.buckets.size());
  std::unordered_map<std::string, std::uint32_t> newest;  // key -> value size
  for (const auto& b : store.buckets) {
    out.buckets += 1;
    out.records += b.index.entries.size();
    out.file_bytes += b.index.file_size;
    out.sound_buckets.push_back(
      {b.path.filename(), b.index.header.format_version, b.index.entries.size()});
    for (const auto& e : b.index.entries) {
      auto [it, fresh] = newest.try_emplace(e.key, e.value_size);
      if (!fresh) {
        out.garbage_bytes += it->second;
        it->second = e.value_size;
      }
    }
    if (verify) verify_bucket(b, out);
    if (verify && shown) shown->advance(1, b.index.file_size);
  }
  for (const auto& [key, size] : newest) out.live_bytes += size;
  out.keys = newest.size();
  for (const auto& r : store.rejected) {
    if (r.path.extension() == ".tmp") out.unsealed.push_back(r.path.filename());
    else out.damaged.push_back(r.path.filename().string() + ": " + r.reason);
  }
  for (const auto& r : store.unreadable)
    out.unreadable.push_back(r.path.filename().string() + ": " + r.reason);
  const auto& forget = store.forget;
  out.forget_entries = forget.entries_read;
  out.forget_bytes = forget.file_bytes;
  out.forgotten_records = forget.records_dropped;
  out.forget_torn_bytes = forget.torn_bytes;
  for (const auto& d : forget.damaged)
    out.forget_damaged.push_back("offset " + std::to_string(d.offset) + ": " +
                                 std::to_string(d.length) + " bytes: " + d.what);
  out.verified = verify;
  return out;
}

}  // namespace spillway
