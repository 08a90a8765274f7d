// A data dir the v1 writer made (tests/fixtures/v1_data_dir, see the README there) is
// read by today's node and `inspect` exactly: a format change must not strand old data.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "tests/caller_memory.hpp"
#include "tests/node_leaks.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

const std::vector<std::size_t> fixture_sizes{0, 1, 4095, 4096, 4097, 102400, 12345};

std::vector<std::string> fixture_keys() {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < fixture_sizes.size(); ++i) keys.push_back(generated_key("v1-", i));
  return keys;
}

// A copy of the fixture: the node takes a lock and may evict, the checkout stays as it is.
std::filesystem::path copy_fixture(const test::temp_dir& dir) {
  const auto data = dir.path() / "data";
  std::filesystem::copy(std::filesystem::path{SPILLWAY_SOURCE_DIR} / "tests/fixtures/v1_data_dir",
                        data);
  return data;
}

TEST_SUITE("store") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "a v1 data dir from the previous writer reads back exactly, beside new v2 data") {
  test::temp_dir dir;
  node n{test::private_node(copy_fixture(dir))};
  auto keys = fixture_keys();
  auto acked = n.put({"v2-new"}, {generated_value(4096, 1, "v2-new")});
  n.flush();
  REQUIRE(acked.get().at(0).ok());
  std::vector<std::uint32_t> versions;  // of the buckets, in name (id) order
  std::set<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator{dir.path() / "data"})
    if (e.path().extension() == ".bucket") files.insert(e.path());
  for (const auto& f : files) {
    bucket_index index;
    REQUIRE(read_bucket_index(f, index).empty());
    versions.push_back(index.header.format_version);
  }
  CHECK(versions == std::vector<std::uint32_t>{1, 1, 2});  // the new one is written as v2
  keys.push_back("v2-new");
  auto sizes = fixture_sizes;
  sizes.push_back(4096);

  const auto values = n.read_values(keys);
  REQUIRE(values.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    REQUIRE_MESSAGE(values[i].status.ok(), keys[i], ": ", to_string(values[i].status));
    CHECK_MESSAGE(values[i].value == generated_value(sizes[i], 1, keys[i]), keys[i]);
  }
  {
    const auto batch = n.get_batch(keys);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto& v = batch.values().at(i);
      REQUIRE_MESSAGE(v.status.ok(), keys[i], ": ", to_string(v.status));
      CHECK_MESSAGE(std::string(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()) ==
                      generated_value(sizes[i], 1, keys[i]),
                    keys[i]);
    }
  }
  std::vector<std::string> buffers;
  for (auto size : sizes) buffers.emplace_back(size, '\0');
  std::vector<std::span<std::byte>> spans;
  for (auto& b : buffers) spans.push_back({reinterpret_cast<std::byte*>(b.data()), b.size()});
  std::vector<std::size_t> got_sizes;
  const auto statuses = n.get_batch_into(keys, spans, got_sizes);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    REQUIRE_MESSAGE(statuses.at(i).ok(), keys[i], ": ", to_string(statuses[i]));
    CHECK(got_sizes.at(i) == sizes[i]);
    CHECK_MESSAGE(buffers[i] == generated_value(sizes[i], 1, keys[i]), keys[i]);
  }
  check_arena(n);
}

// A v1 value sits after its record's header and key, off the page grid: even into
// aligned caller memory it goes through the arena, and lands exactly.
TEST_CASE_FIXTURE(test::node_leaks, "a v1 bucket read into aligned caller memory goes through the arena") {
  test::temp_dir dir;
  node n{test::private_node(copy_fixture(dir))};
  const auto keys = fixture_keys();
  test::caller_memory memory{fixture_sizes, 4096, 0};
  std::vector<std::size_t> got;
  const auto statuses = n.get_batch_into(keys, memory.buffers(), got);
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    REQUIRE_MESSAGE(statuses.at(i).ok(), keys[i], ": ", to_string(statuses[i]));
    CHECK(got.at(i) == fixture_sizes[i]);
    CHECK_MESSAGE(memory.holds(i, generated_value(fixture_sizes[i], 1, keys[i])), keys[i]);
    bytes += fixture_sizes[i];
  }
  const auto io = n.io();
  CHECK(io.read_in_place_bytes == 0);
  CHECK(io.read_copied_bytes == bytes);
  check_arena(n);
}

// What a read fetches is what the arena lends for it while the batch is held: a 4096-byte
// value is one page in v2 and two in v1 (its record's header and key come along).
TEST_CASE_FIXTURE(test::node_leaks,
                  "a v2 read takes only the value's pages, a v1 read its whole record") {
  test::temp_dir dir;
  node n{test::private_node(copy_fixture(dir))};
  auto acked = n.put({"v2-new"}, {generated_value(4096, 1, "v2-new")});
  n.flush();
  REQUIRE(acked.get().at(0).ok());
  const auto lent = [&](const std::string& key) {
    const auto held = n.get_batch({key});
    REQUIRE(held.values().at(0).status.ok());
    const auto s = n.read_stats();
    return s.ready_bytes - s.free_bytes;  // equal while nothing is lent (check_arena)
  };
  CHECK(lent("v2-new") == 4096);
  CHECK(lent("v1-0000000003") == 8192);  // align_up(24 + 13 + 4096)
  check_arena(n);
}

TEST_CASE("inspect --verify finds the v1 fixture sound and says each bucket is version 1") {
  test::temp_dir dir;
  const auto data = copy_fixture(dir);
  const auto r = test::run_spillway({"inspect", "--verify", "--data-dir", data.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("keys 7\n") != std::string::npos);
  CHECK(r.out.find("bucket 0001000000000001.bucket version 1 records 5\n") != std::string::npos);
  CHECK(r.out.find("bucket 0001000000000002.bucket version 1 records 2\n") != std::string::npos);
  CHECK(r.out.find("verified: 0 bad records") != std::string::npos);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
