// Recovery of a bucket the writer never sealed: the records it committed are kept (its
// torn last record cut off), and a .tmp without one whole record is set aside as before.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "runtime/node.hpp"
#include "runtime/storage/bucket_writer.hpp"
#include "runtime/storage/recovery.hpp"
#include "tests/log_capture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

namespace bf = bucket_format;

constexpr std::size_t value_size = 10000;  // three pages a record
constexpr std::uint64_t bucket_id = make_bucket_id(1, 5);

// A .tmp as a crash leaves it: three records committed, then the writer gone. Returns
// its path.
std::filesystem::path committed_tmp(const std::filesystem::path& dir) {
  bucket_writer writer{{dir, 1, true, false, 0600}};
  REQUIRE_FALSE(writer.open(bucket_id));
  for (int i = 0; i < 3; ++i) {
    const auto key = generated_key("k", i);
    const auto value = generated_value(value_size, 1, key);
    REQUIRE_FALSE(writer.append(key, {reinterpret_cast<const std::byte*>(value.data()),
                                      value.size()}));
  }
  REQUIRE_FALSE(writer.commit());
  return writer.tmp_path();  // the writer goes without sealing: committed, it keeps the file
}

// Overwrites one byte of the file at `offset`.
void flip_byte(const std::filesystem::path& path, std::uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  char c = 0;
  REQUIRE(::pread(fd, &c, 1, static_cast<off_t>(offset)) == 1);
  c = static_cast<char>(c ^ 0x5a);
  REQUIRE(::pwrite(fd, &c, 1, static_cast<off_t>(offset)) == 1);
  ::close(fd);
}

const std::uint64_t record_pages =
  bf::record_size(bf::version, generated_key("k", 0).size(), value_size);

// A byte inside the value of the record that starts at `record_offset`.
std::uint64_t inside_value(std::uint64_t record_offset) {
  return bf::value_offset(record_offset, generated_key("k", 0).size()) + 100;
}

TEST_SUITE("data_dir") {

TEST_CASE("an unsealed bucket's committed records are sealed at start") {
  test::temp_dir dir;
  const auto tmp = committed_tmp(dir.path());
  const auto store = recover_data_dir(dir.path(), {false});
  REQUIRE(store.completed.size() == 1);
  CHECK(store.completed[0].reason == "3 whole records kept");
  CHECK(store.rejected.empty());
  REQUIRE(store.buckets.size() == 1);
  CHECK(store.buckets[0].index.entries.size() == 3);
  CHECK_FALSE(std::filesystem::exists(tmp));
  bucket_index reread;
  CHECK(read_bucket_index(dir.path() / bucket_file_name(bucket_id), reread).empty());
  CHECK(reread.entries == store.buckets[0].index.entries);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a torn last record of an unsealed bucket is cut, the records before kept") {
  test::temp_dir dir;
  const auto tmp = committed_tmp(dir.path());
  // The third record lost its last pages, as a crash during its write leaves it.
  std::filesystem::resize_file(tmp, bf::page_size + 2 * record_pages + bf::page_size);
  {
    test::log_capture log{"warn"};
    const auto store = recover_data_dir(dir.path(), {false});
    REQUIRE(store.completed.size() == 1);
    CHECK(store.completed[0].reason ==
          "2 whole records kept, 4096 bytes after them cut: record runs past the file's end");
    CHECK(log.count("completed unsealed") == 1);
  }
  auto config = test::private_node(dir.path());
  config.read.readers = 1;
  node n{config};
  const auto got = n.read_values({generated_key("k", 0), generated_key("k", 1),
                                  generated_key("k", 2)});
  for (int i = 0; i < 2; ++i) {
    REQUIRE_MESSAGE(got[i].status.ok(), to_string(got[i].status));
    CHECK(got[i].value == generated_value(value_size, 1, generated_key("k", i)));
  }
  CHECK(got[2].status.error == key_error::not_found);
  check_arena(n);
}

TEST_CASE("a record that fails its crc ends the scan of an unsealed bucket") {
  test::temp_dir dir;
  const auto tmp = committed_tmp(dir.path());
  flip_byte(tmp, inside_value(bf::page_size + record_pages));  // the second record
  const auto store = recover_data_dir(dir.path(), {false});
  REQUIRE(store.completed.size() == 1);
  CHECK(store.completed[0].reason ==
        "1 whole records kept, " + std::to_string(2 * record_pages) +
          " bytes after them cut: record crc mismatch");
  REQUIRE(store.buckets.size() == 1);
  CHECK(store.buckets[0].index.entries.size() == 1);
}

TEST_CASE("an unsealed bucket whose first record is corrupt is removed as before") {
  test::temp_dir dir;
  const auto tmp = committed_tmp(dir.path());
  flip_byte(tmp, inside_value(bf::page_size));
  const auto store = recover_data_dir(dir.path(), {false});
  CHECK(store.completed.empty());
  CHECK(store.buckets.empty());
  REQUIRE(store.rejected.size() == 1);
  CHECK(store.rejected[0].reason == "never sealed (.tmp), no whole record: record crc mismatch");
  CHECK_FALSE(std::filesystem::exists(tmp));
  CHECK_FALSE(std::filesystem::exists(dir.path() / bucket_file_name(bucket_id)));
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
