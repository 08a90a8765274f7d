// What a node finds in its data dir at start. Every sealed bucket file is checked
// (header, footer, index crc) without reading its values. A .tmp file (a bucket the
// writer never sealed) is completed from its whole records (unsealed_bucket.hpp), which
// include every one acknowledged; one without any, and files proven damaged, are set
// aside in quarantine/ or removed; files
// that could not be read (an open or read error, a symlink, a FIFO) stay where they are
// for the next start. Each is logged with its reason. Then the forget log
// (forget_recovery.hpp) drops the records that removes and evictions killed. The catalog
// is rebuilt from what survives.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/io/progress.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/forget_log.hpp"

namespace spillway {

struct recovered_bucket {
  std::filesystem::path path;
  bucket_index index;
};

struct rejected_file {
  std::filesystem::path path;
  std::string reason;
};

// What recovery made of the forget log.
struct recovered_forget_log {
  std::uint64_t file_bytes = 0;       // as found
  std::uint64_t entries_read = 0;     // whole entries found
  std::uint64_t entries_kept = 0;     // still needed: the log holds these after the start
  std::uint64_t records_dropped = 0;  // records the entries killed, not served
  std::uint64_t torn_bytes = 0;       // a torn append after the last whole entry
  std::vector<forget_damage> damaged;  // skipped, each logged
  bool rewritten = false;             // compacted to the kept entries
  std::uint64_t append_at = 0;        // where the log's whole entries end now
};

struct recovered_store {
  std::vector<recovered_bucket> buckets;  // in bucket id order: later ones win a key
  std::vector<rejected_file> rejected;    // damaged or never sealed: set aside
  std::vector<rejected_file> unreadable;  // left in place, not served
  std::vector<rejected_file> completed;   // .tmp files sealed from their whole records
  std::uint64_t highest_sequence = 0;     // of every bucket or tmp file seen
  std::uint64_t quarantine_bytes = 0;     // what quarantine/ still holds
  recovered_forget_log forget;
};

// The data dir's forget log could not be read: nothing says which records are dead, so
// no record is served (what() names the file and the error).
class forget_log_unreadable : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct recovery_options {
  bool quarantine = true;  // move rejected files to <dir>/quarantine/ rather than unlink them
  // The room for the buckets found and quarantine/ together: quarantined files go,
  // oldest first, until both fit (damaged copies are worth less than cached values).
  std::uint64_t quota_bytes = UINT64_MAX;
  mode_t dir_mode = 0700;  // of quarantine/, when it is created
  progress* shown = nullptr;  // counts the files checked
  mode_t file_mode = 0600;  // of the forget log, when it is rewritten
};

// Throws forget_log_unreadable.
recovered_store recover_data_dir(const std::filesystem::path& dir, const recovery_options& options);

// Scans without changing anything, for `spillway inspect`: .tmp files show as rejected;
// records the forget log kills are dropped as at start. Throws forget_log_unreadable.
recovered_store scan_data_dir(const std::filesystem::path& dir);

}  // namespace spillway
