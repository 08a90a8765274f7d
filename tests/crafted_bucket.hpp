// Crafted bucket files for attack tests: a sealed file's index and footer rewritten
// after a test edits them, every crc made valid again, so that only the layout checks
// stand between the crafted fields and the code that trusts them.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <vector>

#include "runtime/storage/bucket_file.hpp"

namespace spillway::test {

inline void recraft_bucket(const std::filesystem::path& path,
                           const std::function<void(bucket_index&)>& change) {
  namespace bf = bucket_format;
  bucket_index index;
  if (!read_bucket_index(path, index).empty())
    throw std::runtime_error(path.string() + ": not a whole bucket to craft from");
  const auto index_at = index.footer.index_offset;
  change(index);
  std::vector<std::byte> pages(bf::align_up(bf::index_size(index.entries)) + bf::page_size);
  const auto index_bytes = pages.size() - bf::page_size;
  index.footer.index_crc = bf::encode_index(index.entries, std::span{pages}.first(index_bytes));
  bf::encode_footer(index.footer, std::span{pages}.last(bf::page_size));
  std::fstream file{path, std::ios::in | std::ios::out | std::ios::binary};
  file.seekp(static_cast<std::streamoff>(index_at));
  file.write(reinterpret_cast<const char*>(pages.data()),
             static_cast<std::streamsize>(index_bytes));
  file.seekp(static_cast<std::streamoff>(index.file_size - bf::page_size));
  file.write(reinterpret_cast<const char*>(pages.data() + index_bytes), bf::page_size);
  if (!file) throw std::runtime_error(path.string() + ": cannot rewrite");
}

}  // namespace spillway::test
