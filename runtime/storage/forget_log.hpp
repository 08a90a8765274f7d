// The forget log: what makes removes and evictions durable. The one place that defines
// it, byte by byte.
//
// Why a log at all. Recovery indexes every record the bucket files hold, the newest
// winning a key. Nothing in a bucket file says that one of its records was removed, or
// superseded by a record in a bucket since evicted: without this log a removed key came
// back after a restart, and a key whose newest bucket was evicted came back with an
// older value, from an older bucket that survived.
//
// What an entry says. A record's position is (bucket id, offset in the file): bucket ids
// grow with every bucket a node opens (recovery hands out ids past every id it saw, in a
// bucket file's name or in this log), offsets grow within a bucket, so positions are the
// order in which the writer appended records. An entry {key, bound} says: every record of
// `key` at a position before `bound` is dead. A bound, not a set of buckets, because a
// remove must kill what was appended before it and spare what comes after, both possibly
// in the same open bucket; a bucket id alone (`<= B`) would kill a put acknowledged after
// the remove into the bucket still open, or spare one appended before it.
//   remove(keys): the writer takes its own append position as the bound (the open
//     bucket's id and its size so far, or the next bucket's id and 0): every record of
//     those keys appended before the remove is dead, put acknowledged or failed. The
//     entries are written and fdatasynced with the writer's group commit (one fdatasync
//     for every remove queued), then the catalog drops each key whose record lies before
//     the bound, then the remove is answered. A crash before the fdatasync: the remove
//     was not answered, and the key may stay. After it: the key is gone for good.
//   eviction of bucket B: one entry {key, (B, max)} per key whose newest record B held,
//     for the whole batch of buckets one quota check evicts: one write, one fdatasync
//     (group-committed with the writer's). B's file is unlinked only once they are
//     durable, so older records of those keys in surviving buckets never come back,
//     and neither do B's own should the node stop before a pin lets go of the file.
//     Should the log fail, B's file stays until the next start, where it is served
//     again: its keys may come back, with their newest values, never older ones.
//
// At start recovery reads the log before it serves any bucket, drops every record an
// entry kills (counted: forget_records_dropped), and rewrites the log with only the
// entries still needed, one per key, the latest bound: an entry is needed while a record
// it kills is on disk (or may be: files left unread keep every entry that may concern
// them). The rewrite goes to forget.log.tmp, fdatasync, rename, fsync of the directory:
// a crash at any step leaves the old log or the new one, each whole.
//
// Layout, little-endian; every CRC is a CRC-32C stored masked (crc32c.hpp), as in
// bucket files. <data dir>/forget.log:
//
//   offset 0   header, 16 bytes
//     0   8  magic "SPLWFGT1"
//     8   4  format version (1)
//     12  4  crc of bytes [0, 12)
//   offset 16  entries, packed, one after another
//     0   4  crc of bytes [4, 24 + key length) of this entry
//     4   4  key length (1 .. bucket_format::max_key_size)
//     8   8  bound: bucket id
//     16  8  bound: offset in that bucket's file (UINT64_MAX: the whole bucket)
//     24  .. key bytes
//
// Reading, as LevelDB reads its log: an entry cut short by the end of the file, or bytes
// after the last whole entry that hold none, are a torn tail: an append that a crash
// interrupted, never acknowledged (its fdatasync had not returned), dropped quietly and
// counted. An entry that fails its crc with whole entries after it is damage: the reader
// names its offset and length, skips to the next offset where a whole entry checks out
// (a false match needs a 32-bit crc to agree by chance), and goes on.
// What damage costs, chosen on purpose: a damaged entry is ignored, so the records it
// killed may come back (what every remove did before this log), logged loudly with the
// file offset. The other choice, dropping every record the damage might concern, would
// make live newest values disappear, silently and unboundedly; a cache may lose a
// removal it was told of only with a logged reason, never data it was told it holds.
// A bad header makes the whole file damage: the entries are read as if it were whole
// (the entries carry their own crcs), and it is reported.
#pragma once

#include <compare>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace spillway {

constexpr const char* forget_log_name = "forget.log";
constexpr const char* forget_log_tmp_name = "forget.log.tmp";

namespace forget_format {
constexpr std::uint32_t version = 1;
constexpr std::size_t header_size = 16;
constexpr std::size_t entry_header_size = 24;
constexpr std::uint64_t whole_bucket = UINT64_MAX;
}  // namespace forget_format

// Where a record lies: the order in which the writer appended it.
struct record_position {
  std::uint64_t bucket_id = 0;
  std::uint64_t offset = 0;
  auto operator<=>(const record_position&) const = default;
};

// Every record of `key` at a position before `bound` is dead.
struct forget_entry {
  std::string key;
  record_position bound;
  bool operator==(const forget_entry&) const = default;
};

// The log's header, and entries appended to `out`.
void encode_forget_header(std::string& out);
void encode_forget_entry(const forget_entry& entry, std::string& out);

// A stretch of the log that held no whole entry.
struct forget_damage {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string what;
};

struct forget_log_contents {
  bool exists = false;
  std::uint64_t file_bytes = 0;
  std::vector<forget_entry> entries;  // in file order
  std::vector<forget_damage> damaged;  // the header, or entries with whole ones after them
  std::uint64_t torn_bytes = 0;        // after the last whole entry
  std::uint64_t valid_end = 0;         // where the last whole entry ends (appends go there)
  std::string unreadable;              // the file could not be read: why
};

// Decodes a whole log's bytes.
forget_log_contents decode_forget_log(std::span<const std::byte> bytes);
// Reads <dir>/forget.log (never through a symlink); no file is an empty log.
forget_log_contents read_forget_log(const std::filesystem::path& dir);

}  // namespace spillway
