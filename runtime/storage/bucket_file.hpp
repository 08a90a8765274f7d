// Bucket files on disk: their names, and reading a sealed one's index back without
// touching its values (what recovery and `inspect` do).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/storage/bucket_format.hpp"

namespace spillway {

// A bucket id is the node id in the top 16 bits and a sequence in the low 48.
constexpr std::uint64_t make_bucket_id(std::uint64_t node_id, std::uint64_t sequence) {
  return node_id << 48 | (sequence & ((1ull << 48) - 1));
}
constexpr std::uint64_t bucket_sequence(std::uint64_t bucket_id) {
  return bucket_id & ((1ull << 48) - 1);
}

// "<16 hex digits>.bucket", and the .tmp name the writer uses until the file is sealed.
std::string bucket_file_name(std::uint64_t bucket_id);
std::string bucket_tmp_name(std::uint64_t bucket_id);
// The id in a bucket or tmp file name; nullopt for any other name.
std::optional<std::uint64_t> parse_bucket_file_name(const std::string& name);

struct bucket_index {
  bucket_format::header header;
  bucket_format::footer footer;
  std::vector<bucket_format::index_entry> entries;
  std::uint64_t file_size = 0;
};

// What keeps a bucket file from being served, if anything. `damaged`: its bytes
// contradict the format, which no retry changes; otherwise it could not be read (an
// open or read error, not a regular file), which may pass.
struct bucket_problem {
  std::string what;  // empty: the file is whole
  bool damaged = false;
  bool empty() const { return what.empty(); }
};

// Reads exactly `size` bytes at `offset` of `fd`; a file that ends first is unreadable
// (being changed by someone else), not damaged.
bucket_problem read_bucket_bytes(int fd, std::uint64_t offset, std::byte* out, std::size_t size);

// Reads and checks the header, the footer and the index of a sealed bucket file. Every
// size and offset in them is checked against the file's real size before it is used.
bucket_problem read_bucket_index(const std::filesystem::path& path, bucket_index& out);

}  // namespace spillway
