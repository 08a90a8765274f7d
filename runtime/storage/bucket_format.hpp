// Bucket file format, version 1: the one place that defines it, byte by byte.
//
// One file per bucket, named <bucket id as 16 hex digits>.bucket, written as .tmp and
// renamed only once complete and synced. All integers are little-endian. Every CRC is
// a CRC-32C, stored masked (runtime/storage/crc32c.hpp). Sizes are in bytes; a page is 4096.
//
//   offset 0          header page
//     0   8  magic "SPLWBKT1"
//     8   4  format version (1)
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
//     24  .. key bytes, value bytes, zero to the next page boundary
//
//   index_offset      index, one entry per record in file order, packed
//     0   4  key length
//     4   4  value length
//     8   8  record offset
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
// A value is read with one O_DIRECT read of its record's pages. Recovery reads the
// header, the footer and the index of a sealed file, never the values. An unsealed
// file (.tmp, no footer) may hold records the writer committed (fdatasync) and
// acknowledged before the seal: each record header says its own extent and its crc
// covers it, so recovery scans them from the first record page (scan_record) and
// completes the file from the valid prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace spillway::bucket_format {

constexpr std::uint32_t version = 1;
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

// The pages a record takes on disk.
constexpr std::uint64_t record_size(std::size_t key_size, std::uint64_t value_size) {
  return align_up(record_header_size + key_size + value_size);
}

struct header {
  std::uint64_t node_id = 0;
  std::uint64_t bucket_id = 0;
  std::uint64_t created_ns = 0;
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
// (one page; record_size(); align_up(index_size)); padding is written as zeros.
void encode_header(const header& h, bytes out);
// Returns the record's crc (unmasked), which the index repeats.
std::uint32_t encode_record(std::uint64_t bucket_id, std::string_view key,
                            const_bytes value, bytes out);
void encode_footer(const footer& f, bytes out);

// The index's entry bytes, before padding, and the entries' encoding into `out`
// (align_up(index_size(entries)) bytes). Returns the crc of the entries (unmasked).
std::uint64_t index_size(std::span<const index_entry> entries);
std::uint32_t encode_index(std::span<const index_entry> entries, bytes out);

// Decoders return an empty string when the bytes are valid, else what is wrong.
std::string decode_header(const_bytes page, header& out);
std::string decode_footer(const_bytes page, footer& out);
// The index must lie between the header page and the footer page of a file of
// `file_size` bytes (whole pages, at least 2) and end, padded, where the footer starts.
// Checked before footer.index_size sizes anything.
std::string check_index_extent(const footer& f, std::uint64_t file_size);
// `index` holds footer.index_size bytes of entries; each entry is checked against the
// file's layout (page-aligned records, in order, inside the record area).
std::string decode_index(const_bytes index, const footer& f, std::vector<index_entry>& out);

// A record's pages as read from disk, checked against what the index says.
struct record_view {
  std::string_view key;
  const_bytes value;
};
std::string decode_record(const_bytes pages, std::uint64_t bucket_id, const index_entry& want,
                          record_view& out);

// Scanning an unsealed file's records, without an index. The record header at the
// start of `head` (at least record_header_size bytes) gives the record's extent in
// `size` (record_size()); `pages` then holds that many bytes, and `out` gets the
// record's index entry once its crc and bucket id check out.
std::string decode_record_extent(const_bytes head, std::uint64_t bucket_id, std::uint64_t& size);
std::string scan_record(const_bytes pages, std::uint64_t bucket_id, std::uint64_t offset,
                        index_entry& out);

// The index pages and the footer page that seal a file whose records end at
// `index_offset`: tail_size(entries) bytes into `out`. Returns the footer written.
std::uint64_t tail_size(std::span<const index_entry> entries);
footer encode_tail(std::span<const index_entry> entries, std::uint64_t index_offset, bytes out);

}  // namespace spillway::bucket_format
