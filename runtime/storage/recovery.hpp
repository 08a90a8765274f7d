// What a node finds in its data dir at start. Every sealed bucket file is checked
// (header, footer, index crc) without reading its values; .tmp files (writes that
// never sealed) and files that fail are set aside in quarantine/ or removed, each
// logged with its reason. The catalog is rebuilt from what survives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/storage/bucket_file.hpp"

namespace spillway {

struct recovered_bucket {
  std::filesystem::path path;
  bucket_index index;
};

struct rejected_file {
  std::filesystem::path path;
  std::string reason;
};

struct recovered_store {
  std::vector<recovered_bucket> buckets;  // in bucket id order: later ones win a key
  std::vector<rejected_file> rejected;
  std::uint64_t highest_sequence = 0;     // of every bucket or tmp file seen
};

// `quarantine`: move rejected files to <dir>/quarantine/ rather than unlink them.
recovered_store recover_data_dir(const std::filesystem::path& dir, bool quarantine);

// Scans without changing anything, for `spillway inspect`.
recovered_store scan_data_dir(const std::filesystem::path& dir);

}  // namespace spillway
