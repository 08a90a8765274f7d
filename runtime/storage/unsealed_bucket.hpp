// Completing, at start, a bucket the writer never sealed. Its .tmp may hold records
// that were committed (written, fdatasynced) and acknowledged before a crash: each
// record says its own extent and its crc covers it, so they are read in file order
// from the first record page up to the first one that does not decode whole. That
// prefix is sealed as the writer would have sealed it (index and footer after it,
// the rest cut off, fdatasync, rename to .bucket, directory fsync).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "runtime/storage/bucket_file.hpp"

namespace spillway {

struct completed_bucket {
  bucket_index index;
  std::filesystem::path path;  // the sealed file
  std::string cut;             // why the scan stopped before the file's end; empty: it did not
  std::uint64_t cut_bytes = 0; // what was cut off after the last whole record
};

// Seals the whole records of `tmp` (named for bucket `id`) into <id>.bucket. A damaged
// problem: no whole record, or no valid header (the file stays, for the caller to set
// aside); an unreadable one: an I/O error, nothing renamed.
bucket_problem complete_unsealed_bucket(const std::filesystem::path& tmp, std::uint64_t id,
                                        completed_bucket& out);

}  // namespace spillway
