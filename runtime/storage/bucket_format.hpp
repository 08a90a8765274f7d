// Bucket file format, version 2 (written) and version 1 (still read): the one place
// that defines them, byte by byte.
//
// One file per bucket, named <bucket id as 16 hex digits>.bucket, written as .tmp and
// renamed only once complete and synced. All integers are little-endian. Every CRC is
// a CRC-32C, stored masked (runtime/storage/crc32c.hpp). Sizes are in bytes; a page is 4096.
// The two versions differ only in where a record puts its value.
//
//   offset 0          header page
//     0   8  magic "SPLWBKT1"
//     8   4  format version (2; 1 in files the previous writer made)
//     12  4  page size (4096)
//     16  8  node id
//     24  8  bucket id (node id << 48 | sequence)
//     32  8  created, ns since the Unix epoch
//     40  4  crc of bytes [0, 40)
//     44  .. zero to the end of the page
//
//   offset 4096       records, each starting on a page boundary
//     0   4  magic "SPWR"
//     4   4  key length (1 .. max_key_size)
//     8   4  value length
//     12  4  crc of bytes [0, 12) and [16, 24) of this header, then key, then value
//     16  8  bucket id: a record read from the wrong file fails its crc
//     24  .. key bytes
//   version 2:
//     24 + key length  .. zero to the next page boundary: the record's head ends here,
//                         at record_head_size(key length) = align_up(24 + key length)
//     record_head_size    value bytes (value_offset()), then zero to the next page
//                         boundary; the record ends there
//   version 1:
//     24 + key length  .. value bytes, then zero to the next page boundary
//
//   index_offset      index, one entry per record in file order, packed
//     0   4  key length
//     4   4  value length
//     8   8  record offset (of its header, in both versions)
//     16  4  record crc (as in the record header)
//     20  .. key bytes
//                     then zero to the next page boundary
//
//   file size - 4096  footer page
//     0   8  magic "SPLWFTR1"
//     8   8  index offset
//     16  8  index length (entries only, without the padding)
//     24  8  record count
//     32  4  crc of the index entries
//     36  4  crc of bytes [0, 36)
//     40  .. zero to the end of the page
//
// Why version 2 puts each value on its own pages: a read of a value is then exactly the
// value's pages, align_up(value length) bytes at value_offset(), so an O_DIRECT read
// fetches no page the caller does not want (v1 read the header and key too: 33 pages
// for a 128 KiB value) and can land the value straight in a caller's aligned buffer.
// The crc still covers the header fields and the key, and a reader has all of them
// without the head (key, lengths and crc from the index, the bucket id from the header
// page), so a read of the value's pages alone is checked exactly as a whole record is:
// the value is tied to its key and its bucket.
// The padding after the value is read with it and must be zero. The head page before
// the value, rather than the index alone, keeps every record self-describing: the
// records of a bucket that never got its index can still be found by scanning heads
// (decode_record_head), each checked against its crc once its value is read. It costs
// at most one page per record on disk (the head's padding), none on the read path.
//
// A value is read with one O_DIRECT read. Recovery reads the header, the footer and
// the index of a sealed file, never the values. An unsealed file (.tmp, no footer) may
// hold records the writer committed (fdatasync) and acknowledged before the seal: each
// record's head says its own extent and its crc covers it, so recovery scans them from
// the first record page (scan_record) and completes the file from the valid prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace spillway::bucket_format {

constexpr std::uint32_t version = 2;         // what the writer writes
constexpr std::uint32_t oldest_version = 1;  // the oldest a reader still reads
constexpr std::size_t page_size = 4096;
constexpr std::size_t record_header_size = 24;
constexpr std::size_t index_entry_header_size = 20;
constexpr std::size_t max_key_size = 4096;
constexpr std::uint64_t max_value_size = UINT32_MAX;
constexpr std::size_t footer_size = 40;  // the used part of the footer page

using bytes = std::span<std::byte>;
using const_bytes = std::span<const std::byte>;

constexpr std::uint64_t align_up(std::uint64_t n) {
  return (n + page_size - 1) / page_size * page_size;
}

// Version 2: the record's header and key with their padding, the pages before its value.
constexpr std::uint64_t record_head_size(std::size_t key_size) {
  return align_up(record_header_size + key_size);
}

// Version 2: where a record's value starts in the file, from where the record starts.
constexpr std::uint64_t value_offset(std::uint64_t record_offset, std::size_t key_size) {
  return record_offset + record_head_size(key_size);
}

// The pages a record takes on disk.
constexpr std::uint64_t record_size(std::uint32_t format_version, std::size_t key_size,
                                    std::uint64_t value_size) {
  return format_version == 1 ? align_up(record_header_size + key_size + value_size)
                             : record_head_size(key_size) + align_up(value_size);
}

// What one read of a value takes: in v1 the whole record, in v2 the value's pages only.
struct read_extent {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
constexpr read_extent value_read(std::uint32_t format_version, std::uint64_t record_offset,
                                 std::size_t key_size, std::uint64_t value_size) {
  if (format_version == 1) return {record_offset, record_size(1, key_size, value_size)};
  return {value_offset(record_offset, key_size), align_up(value_size)};
}

struct header {
  std::uint64_t node_id = 0;
  std::uint64_t bucket_id = 0;
  std::uint64_t created_ns = 0;
  std::uint32_t format_version = version;  // encode_header writes only `version`
  bool operator==(const header&) const = default;
};

struct index_entry {
  std::string key;
  std::uint32_t value_size = 0;
  std::uint64_t offset = 0;  // of the record, from the start of the file
  std::uint32_t crc = 0;     // unmasked record crc
  bool operator==(const index_entry&) const = default;
};

struct footer {
  std::uint64_t index_offset = 0;
  std::uint64_t index_size = 0;
  std::uint64_t record_count = 0;
  std::uint32_t index_crc = 0;  // unmasked
  bool operator==(const footer&) const = default;
};

// Each encoder writes into `out`, which must be exactly as large as the piece's pages
// (one page; record_size(version, ...); align_up(index_size)); padding is written as
// zeros. Encoders write the current version only.
void encode_header(const header& h, bytes out);
// Returns the record's crc (unmasked), which the index repeats.
std::uint32_t encode_record(std::uint64_t bucket_id, std::string_view key,
                            const_bytes value, bytes out);
// The record's head alone (record_head_size(key length) bytes), its crc computed over
// `value` where it lies: for a writer that writes the value's pages from the caller's
// memory rather than from a copy. Returns the crc, as encode_record does.
std::uint32_t encode_record_head(std::uint64_t bucket_id, std::string_view key,
                                 const_bytes value, bytes out);
void encode_footer(const footer& f, bytes out);

// The index's entry bytes, before padding, and the entries' encoding into `out`
// (align_up(index_size(entries)) bytes). Returns the crc of the entries (unmasked).
std::uint64_t index_size(std::span<const index_entry> entries);
std::uint32_t encode_index(std::span<const index_entry> entries, bytes out);

// Decoders return an empty string when the bytes are valid, else what is wrong.
// decode_header accepts every version from oldest_version to version.
std::string decode_header(const_bytes page, header& out);
std::string decode_footer(const_bytes page, footer& out);
// The index must lie between the header page and the footer page of a file of
// `file_size` bytes (whole pages, at least 2) and end, padded, where the footer starts.
// Checked before footer.index_size sizes anything.
std::string check_index_extent(const footer& f, std::uint64_t file_size);
// `index` holds footer.index_size bytes of entries; each entry is checked against the
// file's layout (page-aligned records of `format_version`, in order, inside the record area).
std::string decode_index(std::uint32_t format_version, const_bytes index, const footer& f,
                         std::vector<index_entry>& out);

// What a record's head says of the record, before its value is read.
struct record_head {
  std::uint64_t value_at = 0;  // from the record's start: after the key (v1), its padding (v2)
  std::uint32_t value_size = 0;
  std::uint32_t crc = 0;  // unmasked
  std::uint64_t bucket_id = 0;
  std::string_view key;   // into the decoded bytes
};
// `bytes` start where a record starts (a page boundary) and hold at least its head: in
// v2 record_head_size(key length), the padding checked to be zero, in v1 its header and
// key. One page holds the head of any key up to 4072 bytes; a longer key needs a second
// (the key length is at offset 4). Nothing here is checked against an index, and the
// crc can be checked only with the value (check_value).
std::string decode_record_head(std::uint32_t format_version, const_bytes bytes,
                               record_head& out);

// A record's pages as read from disk, checked against what the index says.
struct record_view {
  std::string_view key;
  const_bytes value;
};
std::string decode_record(std::uint32_t format_version, const_bytes pages,
                          std::uint64_t bucket_id, const index_entry& want, record_view& out);

// A value and the zero padding read after it (the rest of `bytes`), checked against the
// crc the index holds, which covers the header fields the index implies and the key:
// all a v2 read of a value's pages needs. On success `value` is the value's bytes.
std::string check_value(const_bytes bytes, std::uint64_t bucket_id, const index_entry& want,
                        const_bytes& value);

// A v2 value read in two places: `bulk`, its first bytes (whole pages, or none), and
// `tail`, the rest of it and the zero padding after it. Checked as check_value checks
// the value in one piece; reads in place land the bulk in a caller's buffer.
std::string check_split_value(const_bytes bulk, const_bytes tail, std::uint64_t bucket_id,
                              const index_entry& want);

// Checks what one read of value_read(format_version, ...) brought back; on success
// `value` points at the value inside `read`.
std::string decode_value_read(std::uint32_t format_version, const_bytes read,
                              std::uint64_t bucket_id, const index_entry& want,
                              const_bytes& value);

// Scanning an unsealed file's records, without an index. The record header at the
// start of `head` (at least record_header_size bytes) gives the record's extent in
// `size` (record_size(format_version, ...)); `pages` then holds that many bytes, and
// `out` gets the record's index entry once its crc and bucket id check out.
std::string decode_record_extent(std::uint32_t format_version, const_bytes head,
                                 std::uint64_t bucket_id, std::uint64_t& size);
std::string scan_record(std::uint32_t format_version, const_bytes pages,
                        std::uint64_t bucket_id, std::uint64_t offset, index_entry& out);

// The index pages and the footer page that seal a file whose records end at
// `index_offset`: tail_size(entries) bytes into `out`. Returns the footer written.
std::uint64_t tail_size(std::span<const index_entry> entries);
footer encode_tail(std::span<const index_entry> entries, std::uint64_t index_offset, bytes out);

}  // namespace spillway::bucket_format
