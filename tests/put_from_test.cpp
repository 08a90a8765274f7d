// node::put_from: values written to disk straight from the caller's memory. Each test
// says by the write counters which path every value took, and then overwrites the
// caller's memory before reading back, so a value read exact came from the disk.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tests/caller_memory.hpp"
#include "tests/fault_fs_fixture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

constexpr std::size_t page = test::caller_memory::page;

// The values of `sizes`, generated from their keys, each in a buffer of its own that
// starts `shift` bytes past a page boundary, as a serving engine's KV pool holds them.
struct laid_out {
  test::caller_memory memory;
  std::vector<std::string> keys;
  std::vector<std::span<const std::byte>> values;
  std::uint64_t bytes = 0;

  laid_out(const std::vector<std::size_t>& sizes, std::size_t shift, const std::string& prefix)
      : memory(sizes, 0, shift) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      keys.push_back(generated_key(prefix, i));
      fill_generated_value(memory.buffers()[i], 1, keys.back());
      values.push_back(memory.buffers()[i]);
      bytes += sizes[i];
    }
  }
};

// Every key reads back as its generated value: from the disk, since the caller's memory
// is overwritten first.
void check_from_disk(node& n, const laid_out& values) {
  std::memset(values.memory.base(), 0x5a, values.memory.size());
  const auto got = n.read_values(values.keys);
  for (std::size_t i = 0; i < values.keys.size(); ++i) {
    REQUIRE_MESSAGE(got[i].status.ok(), values.keys[i], ": ", to_string(got[i].status));
    CHECK_MESSAGE(got[i].value == generated_value(values.values[i].size(), 1, values.keys[i]),
                  values.keys[i]);
  }
}

void check_all_ok(const std::vector<key_status>& statuses) {
  for (const auto& s : statuses) CHECK_MESSAGE(s.ok(), to_string(s));
}

TEST_SUITE("store") {

// The writer gathers staged heads and values in place into one write: io_uring's
// writev, or pwritev where the engine is posix.
TEST_CASE_FIXTURE(test::node_leaks,
                  "put_from writes whole pages in place and copies only a last partial page") {
  for (const std::string engine : {"uring", "posix"})
    SUBCASE(engine.c_str()) {
      test::temp_dir dir;
      const laid_out values{{64 << 10, (64 << 10) + 100, 3 * page + 1, 100, 0}, 0, "p-"};
      auto config = test::private_node(dir.path());
      config.read.engine = engine;
      {
        node n{config};
        check_all_ok(n.put_from(values.keys, values.values).get());
        const auto io = n.io();
        CHECK(io.written_in_place_bytes == (64 << 10) + (64 << 10) + 3 * page);
        CHECK(io.written_copied_bytes == 100 + 1 + 100);
        CHECK(io.written_in_place_bytes + io.written_copied_bytes == values.bytes);
        check_from_disk(n, values);
        check_arena(n);
      }
      node again{config};  // sealed at stop, read at start
      check_from_disk(again, values);
    }
}

TEST_CASE_FIXTURE(test::node_leaks, "put_from copies values that do not start on a page") {
  test::temp_dir dir;
  const laid_out values{{64 << 10, 1 << 20}, 8, "u-"};
  node n{test::private_node(dir.path())};
  check_all_ok(n.put_from(values.keys, values.values).get());
  CHECK(n.io().written_in_place_bytes == 0);
  CHECK(n.io().written_copied_bytes == values.bytes);
  check_from_disk(n, values);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "put_from into a filesystem that refuses O_DIRECT copies every value") {
  test::temp_dir dir;
  const laid_out values{{64 << 10, 1 << 20}, 0, "d-"};
  auto config = test::private_node(dir.path());
  config.fault.refuse_o_direct = true;
  node n{config};
  check_all_ok(n.put_from(values.keys, values.values).get());
  CHECK(n.io().written_in_place_bytes == 0);
  CHECK(n.io().written_copied_bytes == values.bytes);
  check_from_disk(n, values);
}

TEST_CASE_FIXTURE(test::node_leaks, "put_from names the culprit of a bad request") {
  test::temp_dir dir;
  node n{test::private_node(dir.path())};
  const laid_out one{{1}, 0, "b-"};
  CHECK_THROWS_WITH_AS(n.put_from({"a", "b"}, {one.values[0]}),
                       "put_from: 2 keys but 1 values", std::invalid_argument);
  const auto statuses = n.put_from({"", "ok"}, {one.values[0], one.values[0]}).get();
  CHECK(statuses[0].error == key_error::bad_key);
  CHECK(statuses[1].ok());
}

}  // TEST_SUITE

TEST_SUITE("fault") {

// A write from caller memory that the disk fails: the keys fail by name, the future is
// ready only once the writer is done with the memory, and the node goes on serving.
TEST_CASE_FIXTURE(test::node_leaks, "faultfs: a failed write in place fails its put by name") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  const laid_out values{{256 << 10, (256 << 10) + 10}, 0, "w-"};
  node n{test::config_on(fs)};
  const auto rule = fs.add("op=write path=*.tmp fault=eio");
  for (const auto& s : n.put_from(values.keys, values.values).get())
    CHECK_MESSAGE((s == key_status{key_error::io_error, EIO}), to_string(s));
  CHECK(fs.injected(rule) >= 1);
  CHECK(n.exists(values.keys) == std::vector<std::uint8_t>{0, 0});
  fs.clear();
  check_all_ok(n.put_from(values.keys, values.values).get());
  CHECK(n.io().written_in_place_bytes >= 2 * (256 << 10));
  check_from_disk(n, values);
  check_arena(n);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
