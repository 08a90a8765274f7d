// Any bytes as a bucket file, read the ways the node reads one: its header page, a record
// head after it and its footer page on their own; the whole file as a sealed bucket
// (read_bucket_index, then every indexed value read the way a reader reads it); and as
// an unsealed .tmp that recovery completes, whose sealed result must read back whole.
//
// The header, footer and index crcs are stamped afresh before anything reads the bytes,
// and so are those of the v2 records that recovery's scan would find, so mutations reach
// the layout checks behind them instead of dying at a crc mismatch (a wrong crc is
// tests/bucket_format_test.cpp's business). v1 records and index entries keep theirs.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/crc32c.hpp"
#include "runtime/storage/unsealed_bucket.hpp"

namespace {

using namespace spillway;
namespace bf = bucket_format;
namespace fs = std::filesystem;

template <class T>
T get(std::span<const std::byte> in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  return value;
}

void put_crc(std::span<std::byte> out, std::size_t at, std::uint32_t crc) {
  const auto masked = mask_crc(crc);
  std::memcpy(out.data() + at, &masked, sizeof masked);
}

// The v2 records from the first record page on, as recovery's scan finds them, each
// head encoded again around its key and value: lengths, key and bucket id stay as the
// input has them, the crc becomes the one that matches.
void stamp_record_crcs(std::span<std::byte> file) {
  const auto id = get<std::uint64_t>(file, 24);
  std::uint64_t size = 0;
  for (std::uint64_t at = bf::page_size; at < file.size(); at += size) {
    const auto record = file.subspan(at);
    if (!bf::decode_record_extent(bf::version, record, id, size).empty() || size > record.size())
      return;
    const std::string key(reinterpret_cast<const char*>(record.data()) + bf::record_header_size,
                          get<std::uint32_t>(record, 4));
    const auto head = bf::record_head_size(key.size());
    const auto value = record.subspan(head, get<std::uint32_t>(record, 8));
    bf::encode_record_head(id, key, value, record.first(head));
  }
}

// Offsets as in bucket_format.hpp: header version at 8, crc at 40; footer index crc at
// 32, its own at 36.
void stamp_crcs(std::span<std::byte> file) {
  if (file.size() < bf::page_size) return;
  if (get<std::uint32_t>(file, 8) == bf::version) stamp_record_crcs(file);
  put_crc(file, 40, crc32c(file.data(), 40));
  if (file.size() < 2 * bf::page_size) return;
  const auto footer = file.last(bf::page_size);
  const auto footer_at = file.size() - bf::page_size;
  const auto index_at = get<std::uint64_t>(footer, 8);
  const auto index_size = get<std::uint64_t>(footer, 16);
  if (index_at <= footer_at && index_size <= footer_at - index_at)
    put_crc(footer, 32, crc32c(file.data() + index_at, index_size));
  put_crc(footer, 36, crc32c(footer.data(), 36));
}

fs::path scratch_dir() {
  const char* shm = "/dev/shm";
  std::string pattern = (fs::is_directory(shm) ? fs::path{shm} : fs::temp_directory_path()) /
                        "spillway-fuzz-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

void write_file(const fs::path& path, std::span<const std::byte> bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

void read_pieces(std::span<const std::byte> file) {
  bf::header header;
  (void)bf::decode_header(file.first(std::min(file.size(), bf::page_size)), header);
  if (file.size() > bf::page_size) {
    bf::record_head head;
    for (std::uint32_t version = bf::oldest_version; version <= bf::version; ++version)
      (void)bf::decode_record_head(version, file.subspan(bf::page_size), head);
  }
  bf::footer footer;
  (void)bf::decode_footer(file.last(std::min(file.size(), bf::page_size)), footer);
}

// Every value the index promises lies before the index, and reads as a reader reads it.
void read_sealed(const fs::path& path, std::span<const std::byte> file) {
  write_file(path, file);
  bucket_index index;
  if (!read_bucket_index(path, index).empty()) return;
  for (const auto& entry : index.entries) {
    const auto version = index.header.format_version;
    const auto extent = bf::value_read(version, entry.offset, entry.key.size(), entry.value_size);
    if (extent.offset > index.footer.index_offset ||
        extent.length > index.footer.index_offset - extent.offset)
      std::abort();
    std::span<const std::byte> value;
    (void)bf::decode_value_read(version, file.subspan(extent.offset, extent.length),
                                index.header.bucket_id, entry, value);
  }
}

// What recovery seals must be a bucket that reads back with the same entries.
void complete_unsealed(const fs::path& dir, std::span<const std::byte> file) {
  if (file.size() < 32) return;
  const auto id = get<std::uint64_t>(file, 24);  // the header's bucket id
  const auto tmp = dir / bucket_tmp_name(id);
  write_file(tmp, file);
  completed_bucket done;
  if (complete_unsealed_bucket(tmp, id, done).empty()) {
    bucket_index again;
    if (!read_bucket_index(done.path, again).empty() || again.entries != done.index.entries)
      std::abort();
  }
  fs::remove(tmp);
  fs::remove(dir / bucket_file_name(id));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = scratch_dir();
  static const int cleanup = std::atexit([] { fs::remove_all(dir); });
  (void)cleanup;
  std::vector<std::byte> file(size);
  if (size != 0) std::memcpy(file.data(), data, size);
  stamp_crcs(file);
  read_pieces(file);
  read_sealed(dir / "sealed.bucket", file);
  complete_unsealed(dir, file);
  return 0;
}
