// Writes bucket files, one open at a time. Each value is copied once, into a page-
// aligned staging slot, and goes to disk from there (O_DIRECT where the filesystem
// takes it) through io_uring, a few slots in flight while the next fills; pwrite
// where io_uring is unusable. A value the caller keeps in place until it is committed
// (node::put_from) is not copied where it need not be: its whole pages are written
// from the caller's memory, and only its head (record header, key) and last partial
// page are staged; format v2 puts values on page boundaries for that. Sealing writes the index and footer, fdatasyncs,
// renames <id>.tmp to <id>.bucket and fsyncs the directory: only then does the file
// exist under its real name, so a crash leaves either a whole bucket or a .tmp.
// Before that, commit() makes the records staged so far durable in the .tmp (group
// commit): a crash then leaves a .tmp whose committed records recovery keeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/io_failure.hpp"

namespace spillway {

class bucket_writer {
public:
  struct options {
    std::filesystem::path dir;
    std::uint64_t node_id = 1;
    bool use_uring = true;
    bool refuse_o_direct = false;  // fault injection: act as if O_DIRECT gave EINVAL
    unsigned file_mode = 0600;     // of the bucket files (less what the umask masks)
  };

  explicit bucket_writer(options opts);
  ~bucket_writer();  // abandons an open bucket
  bucket_writer(const bucket_writer&) = delete;
  bucket_writer& operator=(const bucket_writer&) = delete;

  // Creates <id>.tmp and stages its header page.
  std::optional<io_failure> open(std::uint64_t bucket_id);

  // Stages one record; a failed earlier write is reported here. key and value must
  // fit the format (bucket_format::max_key_size, max_value_size). `caller_keeps`: the
  // value's memory stays as it is until the next commit(), seal() or abandon() has
  // returned, so its whole pages (in_place_bytes()) are written from there, not copied.
  std::optional<io_failure> append(std::string_view key, std::span<const std::byte> value,
                                   bool caller_keeps = false);

  // How much of a value kept by the caller append() writes in place: its whole pages
  // when it starts on a page and the file takes O_DIRECT; the rest is copied.
  std::uint64_t in_place_bytes(std::span<const std::byte> value) const;

  // Writes out the records staged so far and fdatasyncs them; the first commit of a
  // bucket also fsyncs the directory, so the .tmp's name is durable with them.
  std::optional<io_failure> commit();

  // Writes everything out, syncs and renames; on success `sealed` describes the file.
  // On failure the tmp file is gone unless it holds committed records (recovery
  // completes it at the next start). Either way no bucket is open afterwards.
  std::optional<io_failure> seal(bucket_index& sealed);

  // After a failed write: forgets the records staged since the last commit, so that
  // seal() completes the bucket from its committed ones. False when none was committed.
  bool rewind_to_commit();

  // Drops the open bucket: waits for its writes, removes its tmp file unless it holds
  // committed records.
  void abandon();

  bool is_open() const;
  std::uint64_t bucket_id() const;
  std::uint64_t file_size() const;  // header and records staged so far
  std::size_t record_count() const;
  // The records committed so far, in file order; committed_size() is where they end.
  std::span<const bucket_format::index_entry> committed() const;
  std::uint64_t committed_size() const;
  std::filesystem::path tmp_path() const;

private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace spillway
