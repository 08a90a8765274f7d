// `spillway inspect`: what a data dir holds, read from its files alone (no node runs),
// and with `verify` every record read back and checked.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/io/progress.hpp"

namespace spillway {

struct bad_record {
  std::string bucket_file;
  std::string key;
  std::uint64_t offset = 0;
  std::string problem;
};

struct inspected_bucket {
  std::string file;
  std::uint32_t format_version = 0;
  std::uint64_t records = 0;
};

struct store_inspection {
  std::uint64_t buckets = 0;
  std::uint64_t records = 0;
  std::uint64_t keys = 0;            // distinct keys: the newest record of each counts
  std::uint64_t file_bytes = 0;
  std::uint64_t live_bytes = 0;      // value bytes of the keys
  std::uint64_t garbage_bytes = 0;   // value bytes of records a newer one replaced
  std::vector<std::string> damaged;  // "<file>: <why>" for bucket files that fail recovery
  std::vector<std::string> unreadable;  // "<file>: <why>": not read now, not proven damaged
  std::vector<std::string> unsealed; // .tmp files: buckets being written, or a crash's
  std::vector<inspected_bucket> sound_buckets;  // in bucket id order
  std::vector<bad_record> bad_records;
  // The forget log: its whole entries and bytes, the records they kill (not counted
  // above), a torn tail, and damaged stretches ("offset N: L bytes: why").
  std::uint64_t forget_entries = 0;
  std::uint64_t forget_bytes = 0;
  std::uint64_t forgotten_records = 0;
  std::uint64_t forget_torn_bytes = 0;
  std::vector<std::string> forget_damaged;
  bool verified = false;
};

// With `verify`, `shown` (if any) counts the buckets read back.
store_inspection inspect_store(const std::filesystem::path& data_dir, bool verify,
                               progress* shown = nullptr);

}  // namespace spillway
