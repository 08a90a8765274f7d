// Appends to the forget log (format and why: forget_log.hpp) and rewrites it at start.
// Entries are staged, then one commit() writes them all and fdatasyncs once: the writer
// actor calls it in its group commit, so every remove and eviction queued meanwhile
// shares one fdatasync. A commit that fails cuts the file back to where it was, so a
// half-written entry never sits before later ones (where it would read as damage).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/forget_log.hpp"
#include "runtime/storage/io_failure.hpp"

namespace spillway {

class forget_log_writer {
public:
  // `end`: where the log's whole entries end (recovery says; 0: read the log to find
  // out); what follows is cut.
  forget_log_writer(std::filesystem::path dir, std::uint64_t end, mode_t file_mode);

  void stage(const forget_entry& entry);
  std::size_t staged() const { return staged_count_; }

  // Writes the staged entries and fdatasyncs them; the file is opened (and created with
  // its header, its name synced) first if it is not open yet. Either way nothing is
  // staged afterwards; on failure the entries may or may not be on disk.
  std::optional<io_failure> commit();

  std::uint64_t entries_written() const { return written_; }

private:
  std::optional<io_failure> open();

  std::filesystem::path dir_;
  std::filesystem::path path_;
  mode_t mode_;
  unique_fd fd_;
  std::uint64_t end_;
  std::string staged_bytes_;
  std::size_t staged_count_ = 0;
  std::uint64_t written_ = 0;
};

// The compaction at start: `entries` become the whole log, through forget.log.tmp,
// fdatasync, rename and an fsync of the directory. On failure the old log stays as it was.
std::optional<io_failure> rewrite_forget_log(const std::filesystem::path& dir,
                                             std::span<const forget_entry> entries,
                                             mode_t file_mode);

}  // namespace spillway
