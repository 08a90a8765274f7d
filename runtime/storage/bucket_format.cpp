// Encoding and decoding of bucket files (layout in bucket_format.hpp). Plain functions
// over byte spans: no I/O here, so every corruption can be tested by flipping bytes.
#include "runtime/storage/bucket_format.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstring>

#include "runtime/storage/crc32c.hpp"
#include "runtime/storage/printable_key.hpp"

namespace spillway::bucket_format {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the format is little-endian and encoded with memcpy");

constexpr char header_magic[8] = {'S', 'P', 'L', 'W', 'B', 'K', 'T', '1'};
constexpr char footer_magic[8] = {'S', 'P', 'L', 'W', 'F', 'T', 'R', '1'};
constexpr char record_magic[4] = {'S', 'P', 'W', 'R'};
constexpr std::size_t header_crc_at = 40;
constexpr std::size_t footer_crc_at = 36;
constexpr std::size_t record_crc_at = 12;
static_assert(header_crc_at + 4 <= page_size && footer_size <= page_size);

template <class T>
void put(bytes out, std::size_t at, T value) {
  std::memcpy(out.data() + at, &value, sizeof value);
}

template <class T>
T get(const_bytes in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  return value;
}

void put_bytes(bytes out, std::size_t at, const void* data, std::size_t size) {
  if (size != 0) std::memcpy(out.data() + at, data, size);
}

bool has_magic(const_bytes in, const char* magic, std::size_t size) {
  return std::memcmp(in.data(), magic, size) == 0;
}

// The record header the writer writes, crc field zero.
void encode_record_header(std::uint64_t bucket_id, std::size_t key_size,
                          std::size_t value_size, bytes out) {
  put_bytes(out, 0, record_magic, sizeof record_magic);
  put(out, 4, static_cast<std::uint32_t>(key_size));
  put(out, 8, static_cast<std::uint32_t>(value_size));
  put<std::uint32_t>(out, record_crc_at, 0);
  put(out, 16, bucket_id);
}

// The crc of a record: its header without the crc field, then key, then value (`first`
// and `rest` together). The header is rebuilt from the fields, so a read of the value
// alone is checked as fully.
std::uint32_t record_crc(std::uint64_t bucket_id, std::string_view key, const_bytes first,
                         const_bytes rest = {}) {
  std::array<std::byte, record_header_size> header;
  encode_record_header(bucket_id, key.size(), first.size() + rest.size(), header);
  std::uint32_t crc = crc32c(header.data(), record_crc_at);
  crc = crc32c_extend(crc, header.data() + record_crc_at + 4,
                      record_header_size - record_crc_at - 4);
  crc = crc32c_extend(crc, key.data(), key.size());
  crc = crc32c_extend(crc, first.data(), first.size());
  return crc32c_extend(crc, rest.data(), rest.size());
}

bool all_zero(const_bytes in) {
  return std::all_of(in.begin(), in.end(), [](std::byte b) { return b == std::byte{0}; });
}

std::string size_problem(const char* what, std::size_t got, std::size_t want) {
  return std::string{what} + " is " + std::to_string(got) + " bytes, expected " +
         std::to_string(want);
}

}  // namespace

void encode_header(const header& h, bytes out) {
  std::memset(out.data(), 0, out.size());
  put_bytes(out, 0, header_magic, sizeof header_magic);
  assert(h.format_version == version);
  put<std::uint32_t>(out, 8, version);
  put<std::uint32_t>(out, 12, page_size);
  put(out, 16, h.node_id);
  put(out, 24, h.bucket_id);
  put(out, 32, h.created_ns);
  put(out, header_crc_at, mask_crc(crc32c(out.data(), header_crc_at)));
}

std::string decode_header(const_bytes page, header& out) {
  if (page.size() != page_size) return size_problem("header page", page.size(), page_size);
  if (!has_magic(page, header_magic, sizeof header_magic)) return "header magic is wrong";
  if (unmask_crc(get<std::uint32_t>(page, header_crc_at)) != crc32c(page.data(), header_crc_at))
    return "header crc mismatch";
  out.format_version = get<std::uint32_t>(page, 8);
  if (out.format_version < oldest_version || out.format_version > version)
    return "format version " + std::to_string(out.format_version) + " is unknown";
  if (get<std::uint32_t>(page, 12) != page_size) return "page size is not 4096";
  out.node_id = get<std::uint64_t>(page, 16);
  out.bucket_id = get<std::uint64_t>(page, 24);
  out.created_ns = get<std::uint64_t>(page, 32);
  return {};
}

std::uint32_t encode_record_head(std::uint64_t bucket_id, std::string_view key,
                                 const_bytes value, bytes out) {
  assert(out.size() == record_head_size(key.size()));
  encode_record_header(bucket_id, key.size(), value.size(), out);
  put_bytes(out, record_header_size, key.data(), key.size());
  const std::size_t key_end = record_header_size + key.size();
  std::memset(out.data() + key_end, 0, out.size() - key_end);
  const std::uint32_t crc = record_crc(bucket_id, key, value);
  put(out, record_crc_at, mask_crc(crc));
  return crc;
}

std::uint32_t encode_record(std::uint64_t bucket_id, std::string_view key, const_bytes value,
                            bytes out) {
  assert(out.size() == record_size(version, key.size(), value.size()));
  const auto value_at = record_head_size(key.size());
  put_bytes(out, value_at, value.data(), value.size());
  std::memset(out.data() + value_at + value.size(), 0, out.size() - value_at - value.size());
  return encode_record_head(bucket_id, key, value, out.first(value_at));
}

std::string decode_record_head(std::uint32_t format_version, const_bytes bytes,
                               record_head& out) {
  if (bytes.size() < record_header_size)
    return size_problem("record header", bytes.size(), record_header_size);
  if (!has_magic(bytes, record_magic, sizeof record_magic)) return "record magic is wrong";
  const auto key_size = get<std::uint32_t>(bytes, 4);
  if (key_size == 0 || key_size > max_key_size) return "record has a bad key length";
  const std::size_t key_end = record_header_size + key_size;
  const std::size_t head = format_version == 1 ? key_end : record_head_size(key_size);
  if (bytes.size() < head) return size_problem("record head", bytes.size(), head);
  if (!all_zero(bytes.subspan(key_end, head - key_end))) return "record key padding is not zero";
  out.value_at = head;
  out.value_size = get<std::uint32_t>(bytes, 8);
  out.crc = unmask_crc(get<std::uint32_t>(bytes, record_crc_at));
  out.bucket_id = get<std::uint64_t>(bytes, 16);
  out.key = {reinterpret_cast<const char*>(bytes.data()) + record_header_size, key_size};
  return {};
}

std::string check_split_value(const_bytes bulk, const_bytes tail, std::uint64_t bucket_id,
                              const index_entry& want) {
  if (bulk.size() > want.value_size || bulk.size() + tail.size() < want.value_size)
    return size_problem("value", bulk.size() + tail.size(), want.value_size);
  const auto tail_value = tail.first(want.value_size - bulk.size());
  if (record_crc(bucket_id, want.key, bulk, tail_value) != want.crc) return "record crc mismatch";
  if (!all_zero(tail.subspan(tail_value.size()))) return "value padding is not zero";
  return {};
}

std::string check_value(const_bytes bytes, std::uint64_t bucket_id, const index_entry& want,
                        const_bytes& value) {
  auto problem = check_split_value({}, bytes, bucket_id, want);
  if (problem.empty()) value = bytes.first(want.value_size);
  return problem;
}

std::string decode_record(std::uint32_t format_version, const_bytes pages,
                          std::uint64_t bucket_id, const index_entry& want, record_view& out) {
  const auto size = record_size(format_version, want.key.size(), want.value_size);
  if (pages.size() < size) return size_problem("record", pages.size(), size);
  record_head head;
  if (auto problem = decode_record_head(format_version, pages.first(size), head);
      !problem.empty())
    return problem;
  if (head.key.size() != want.key.size() || head.value_size != want.value_size)
    return "record lengths differ from the index";
  if (head.crc != want.crc) return "record crc differs from the index";
  if (head.bucket_id != bucket_id) return "record belongs to another bucket";
  if (head.key != want.key) return "record key differs from the index";
  const_bytes value;
  if (auto problem =
        check_value(pages.subspan(head.value_at, size - head.value_at), bucket_id, want, value);
      !problem.empty())
    return problem;
  out = record_view{head.key, value};
  return {};
}

std::string decode_value_read(std::uint32_t format_version, const_bytes read,
                              std::uint64_t bucket_id, const index_entry& want,
                              const_bytes& value) {
  if (format_version != 1) return check_value(read, bucket_id, want, value);
  record_view view;
  auto problem = decode_record(format_version, read, bucket_id, want, view);
  value = view.value;
  return problem;
}

std::string decode_record_extent(std::uint32_t format_version, const_bytes head,
                                 std::uint64_t bucket_id, std::uint64_t& size) {
  if (head.size() < record_header_size)
    return size_problem("record header", head.size(), record_header_size);
  if (!has_magic(head, record_magic, sizeof record_magic)) return "record magic is wrong";
  const auto key_size = get<std::uint32_t>(head, 4);
  if (key_size == 0 || key_size > max_key_size) return "record has a bad key length";
  if (get<std::uint64_t>(head, 16) != bucket_id) return "record belongs to another bucket";
  size = record_size(format_version, key_size, get<std::uint32_t>(head, 8));
  return {};
}

std::string scan_record(std::uint32_t format_version, const_bytes pages,
                        std::uint64_t bucket_id, std::uint64_t offset, index_entry& out) {
  record_head head;
  if (auto problem = decode_record_head(format_version, pages, head); !problem.empty())
    return problem;
  index_entry found{std::string{head.key}, head.value_size, offset, head.crc};
  record_view view;
  if (auto problem = decode_record(format_version, pages, bucket_id, found, view);
      !problem.empty())
    return problem;
  out = std::move(found);
  return {};
}

std::uint64_t index_size(std::span<const index_entry> entries) {
  std::uint64_t size = 0;
  for (const auto& e : entries) size += index_entry_header_size + e.key.size();
  return size;
}

std::uint32_t encode_index(std::span<const index_entry> entries, bytes out) {
  std::size_t at = 0;
  for (const auto& e : entries) {
    put(out, at, static_cast<std::uint32_t>(e.key.size()));
    put(out, at + 4, e.value_size);
    put(out, at + 8, e.offset);
    put(out, at + 16, mask_crc(e.crc));
    put_bytes(out, at + index_entry_header_size, e.key.data(), e.key.size());
    at += index_entry_header_size + e.key.size();
  }
  std::memset(out.data() + at, 0, out.size() - at);
  return crc32c(out.data(), at);
}

void encode_footer(const footer& f, bytes out) {
  std::memset(out.data(), 0, out.size());
  put_bytes(out, 0, footer_magic, sizeof footer_magic);
  put(out, 8, f.index_offset);
  put(out, 16, f.index_size);
  put(out, 24, f.record_count);
  put(out, 32, mask_crc(f.index_crc));
  put(out, footer_crc_at, mask_crc(crc32c(out.data(), footer_crc_at)));
}

std::uint64_t tail_size(std::span<const index_entry> entries) {
  return align_up(index_size(entries)) + page_size;
}

footer encode_tail(std::span<const index_entry> entries, std::uint64_t index_offset, bytes out) {
  footer f;
  f.index_offset = index_offset;
  f.index_size = index_size(entries);
  f.record_count = entries.size();
  const auto index_pages = align_up(f.index_size);
  f.index_crc = encode_index(entries, out.first(index_pages));
  encode_footer(f, out.subspan(index_pages, page_size));
  return f;
}

std::string decode_footer(const_bytes page, footer& out) {
  if (page.size() != page_size) return size_problem("footer page", page.size(), page_size);
  if (!has_magic(page, footer_magic, sizeof footer_magic)) return "footer magic is wrong";
  if (unmask_crc(get<std::uint32_t>(page, footer_crc_at)) != crc32c(page.data(), footer_crc_at))
    return "footer crc mismatch";
  out.index_offset = get<std::uint64_t>(page, 8);
  out.index_size = get<std::uint64_t>(page, 16);
  out.record_count = get<std::uint64_t>(page, 24);
  out.index_crc = unmask_crc(get<std::uint32_t>(page, 32));
  if (out.index_offset < page_size || out.index_offset % page_size != 0)
    return "index offset " + std::to_string(out.index_offset) + " is not a page past the header";
  return {};
}

std::string check_index_extent(const footer& f, std::uint64_t file_size) {
  assert(file_size >= 2 * page_size);
  const std::uint64_t footer_offset = file_size - page_size;
  if (f.index_offset > footer_offset)
    return "index offset " + std::to_string(f.index_offset) + " is past the footer at " +
           std::to_string(footer_offset);
  // Subtracted, never added: a crafted size near 2^64 must not wrap into the file.
  const std::uint64_t room = footer_offset - f.index_offset;
  if (f.index_size > room)
    return "index size " + std::to_string(f.index_size) + " exceeds the " +
           std::to_string(room) + " bytes before the footer";
  if (align_up(f.index_size) != room) return "index does not end where the footer starts";
  return {};
}

// Checks one entry against the layout: records are page-aligned, in file order, and
// end before the index starts. Subtracted, never added, so no offset can wrap.
static std::string check_entry(std::uint32_t format_version, const index_entry& e,
                               std::uint64_t record_area_start, std::uint64_t index_offset) {
  if (e.key.empty() || e.key.size() > max_key_size) return "index entry has a bad key length";
  if (e.offset % page_size != 0 || e.offset < record_area_start || e.offset > index_offset)
    return "index entry for '" + printable_key(e.key) + "' points at offset " +
           std::to_string(e.offset);
  if (record_size(format_version, e.key.size(), e.value_size) > index_offset - e.offset)
    return "index entry for '" + printable_key(e.key) + "' runs into the index";
  return {};
}

std::string decode_index(std::uint32_t format_version, const_bytes index, const footer& f,
                         std::vector<index_entry>& out) {
  if (index.size() != f.index_size) return size_problem("index", index.size(), f.index_size);
  if (crc32c(index.data(), index.size()) != f.index_crc) return "index crc mismatch";
  out.clear();
  std::uint64_t next_record = page_size;  // records follow the header page, in order
  for (std::size_t at = 0; at < index.size();) {
    if (index.size() - at < index_entry_header_size) return "index ends inside an entry";
    index_entry e;
    const auto key_size = get<std::uint32_t>(index, at);
    e.value_size = get<std::uint32_t>(index, at + 4);
    e.offset = get<std::uint64_t>(index, at + 8);
    e.crc = unmask_crc(get<std::uint32_t>(index, at + 16));
    at += index_entry_header_size;
    if (index.size() - at < key_size) return "index ends inside a key";
    e.key.assign(reinterpret_cast<const char*>(index.data()) + at, key_size);
    at += key_size;
    if (auto problem = check_entry(format_version, e, next_record, f.index_offset);
        !problem.empty())
      return problem;
    next_record = e.offset + record_size(format_version, e.key.size(), e.value_size);
    out.push_back(std::move(e));
  }
  if (out.size() != f.record_count)
    return "index holds " + std::to_string(out.size()) + " entries, the footer says " +
           std::to_string(f.record_count);
  return {};
}

}  // namespace spillway::bucket_format
