// The forget log's bytes (runtime/storage/forget_log.hpp): round trips, a torn tail cut
// at every length, a damaged entry between whole ones, a bad header, and the writer's
// appends and the compaction's rewrite on a real file. The tests own the bytes, as
// LevelDB's log_test does.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "runtime/storage/forget_log.hpp"
#include "runtime/storage/forget_log_writer.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

std::vector<forget_entry> three_entries() {
  return {{"alpha", {0x0001000000000005, 8192}},
          {"b", {0x0001000000000006, forget_format::whole_bucket}},
          {std::string(300, 'k'), {7, 0}}};
}

std::string log_of(const std::vector<forget_entry>& entries) {
  std::string bytes;
  encode_forget_header(bytes);
  for (const auto& e : entries) encode_forget_entry(e, bytes);
  return bytes;
}

forget_log_contents decode(const std::string& bytes) {
  return decode_forget_log(std::as_bytes(std::span{bytes}));
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, {}};
}

TEST_SUITE("store") {

TEST_CASE("forget log: entries round trip and say where they end") {
  const auto entries = three_entries();
  const auto bytes = log_of(entries);
  const auto got = decode(bytes);
  CHECK(got.entries == entries);
  CHECK(got.damaged.empty());
  CHECK(got.torn_bytes == 0);
  CHECK(got.valid_end == bytes.size());
  CHECK(bytes.size() == forget_format::header_size + 3 * forget_format::entry_header_size +
                          5 + 1 + 300);
}

TEST_CASE("forget log: a tail cut at any length is torn and keeps the whole entries") {
  const auto entries = three_entries();
  const auto whole = log_of(entries);
  const auto two = log_of({entries[0], entries[1]}).size();
  for (auto cut = two + 1; cut < whole.size(); ++cut) {
    const auto got = decode(whole.substr(0, cut));
    REQUIRE_MESSAGE(got.entries.size() == 2, "cut at ", cut);
    CHECK(got.damaged.empty());
    CHECK(got.torn_bytes == cut - two);
    CHECK(got.valid_end == two);
  }
  // A file extended with zeros a crash left unwritten reads the same way.
  const auto zeros = decode(whole + std::string(100, '\0'));
  CHECK(zeros.entries == entries);
  CHECK(zeros.torn_bytes == 100);
  CHECK(zeros.damaged.empty());
  // A header cut short: the log's creation was torn, nothing in it.
  const auto stub = decode(whole.substr(0, 10));
  CHECK(stub.entries.empty());
  CHECK(stub.torn_bytes == 10);
}

TEST_CASE("forget log: a damaged entry between whole ones is named and skipped alone") {
  const auto entries = three_entries();
  auto bytes = log_of(entries);
  const auto second_at = log_of({entries[0]}).size();
  bytes[second_at + forget_format::entry_header_size] ^= 0x20;  // the key of "b"
  const auto got = decode(bytes);
  CHECK(got.entries == std::vector<forget_entry>{entries[0], entries[2]});
  REQUIRE(got.damaged.size() == 1);
  CHECK(got.damaged[0].offset == second_at);
  CHECK(got.damaged[0].length == forget_format::entry_header_size + 1);
  CHECK(got.torn_bytes == 0);
  CHECK(got.valid_end == bytes.size());
}

TEST_CASE("forget log: a damaged length is skipped to the next entry that checks out") {
  const auto entries = three_entries();
  auto bytes = log_of(entries);
  const auto first_at = forget_format::header_size;
  bytes[first_at + 4] = '\x7f';  // key length 127: runs into the next entry, crc fails
  const auto got = decode(bytes);
  CHECK(got.entries == std::vector<forget_entry>{entries[1], entries[2]});
  REQUIRE(got.damaged.size() == 1);
  CHECK(got.damaged[0].offset == first_at);
}

TEST_CASE("forget log: a bad header is damage and the entries are still read") {
  auto bytes = log_of(three_entries());
  bytes[0] = 'X';
  const auto got = decode(bytes);
  CHECK(got.entries == three_entries());
  REQUIRE(got.damaged.size() == 1);
  CHECK(got.damaged[0].what == "bad magic");
}

TEST_CASE("forget log: the writer appends one commit at a time and cuts a torn tail first") {
  test::temp_dir dir;
  const auto entries = three_entries();
  {
    forget_log_writer log{dir.path(), 0, 0600};
    log.stage(entries[0]);
    CHECK(log.staged() == 1);
    REQUIRE_FALSE(log.commit());
    CHECK(log.staged() == 0);
    CHECK(log.entries_written() == 1);
  }
  const auto path = dir.path() / forget_log_name;
  std::ofstream{path, std::ios::app | std::ios::binary} << "torn!";  // a crash mid-append
  auto found = read_forget_log(dir.path());
  CHECK(found.torn_bytes == 5);
  {
    forget_log_writer log{dir.path(), found.valid_end, 0600};
    log.stage(entries[1]);
    log.stage(entries[2]);
    REQUIRE_FALSE(log.commit());
  }
  found = read_forget_log(dir.path());
  CHECK(found.entries == entries);
  CHECK(found.torn_bytes == 0);
  CHECK(file_text(path) == log_of(entries));
}

TEST_CASE("forget log: the compaction's rewrite replaces the log whole") {
  test::temp_dir dir;
  const auto entries = three_entries();
  std::ofstream{dir.path() / forget_log_name, std::ios::binary} << log_of(entries) << "junk";
  REQUIRE_FALSE(rewrite_forget_log(dir.path(), std::span{entries}.first(1), 0600));
  CHECK(file_text(dir.path() / forget_log_name) == log_of({entries[0]}));
  CHECK_FALSE(std::filesystem::exists(dir.path() / forget_log_tmp_name));
}

TEST_CASE("forget log: no file is an empty log and a directory in its place is unreadable") {
  test::temp_dir dir;
  const auto none = read_forget_log(dir.path());
  CHECK_FALSE(none.exists);
  CHECK(none.unreadable.empty());
  std::filesystem::create_directory(dir.path() / forget_log_name);
  CHECK(read_forget_log(dir.path()).unreadable.find("not a regular file") != std::string::npos);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
