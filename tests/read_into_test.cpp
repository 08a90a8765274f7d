// get_batch_into's reads in place (issue 15): values land in the caller's own memory,
// byte-exact and never past their length, by the way the counters say: straight from
// the disk (read_fixed into registered memory, plain reads into aligned memory), with
// a partial last page bounced through the arena, or all through the arena.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "runtime/io/kernel_probe.hpp"
#include "runtime/node.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "tests/caller_memory.hpp"
#include "tests/eventually.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

using test::caller_memory;
constexpr std::uint64_t page = bucket_format::page_size;

// Whole pages, a partial last page after whole ones, one smaller than a page (all bounce).
const std::vector<std::size_t> sizes{4096, 128 << 10, 3 * 4096 + 100, 1887436, 5000, 100};

node_config into_config(const std::filesystem::path& dir) {
  auto config = test::private_node(dir);
  config.read.readers = 2;
  return config;
}

std::vector<std::string> write_values(node& n) {
  std::vector<std::string> keys, values;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    keys.push_back(generated_key("into-", i));
    values.push_back(generated_value(sizes[i], 8, keys.back()));
  }
  auto acked = n.put(keys, std::move(values));
  n.flush();
  for (const auto& s : acked.get()) REQUIRE(s.ok());
  return keys;
}

// The read path's bytes so far (io_report): in place, bounced, copied.
struct ways {
  std::uint64_t in_place = 0, bounced = 0, copied = 0;
  bool operator==(const ways&) const = default;
};

ways ways_of(node& n) {
  const auto io = n.io();
  return {io.read_in_place_bytes, io.read_bounced_bytes, io.read_copied_bytes};
}

ways since(node& n, const ways& before) {
  const auto now = ways_of(n);
  return {now.in_place - before.in_place, now.bounced - before.bounced, now.copied - before.copied};
}

// What reading `sizes` takes, in place where the buffers allow it, else through the arena.
ways expected(bool in_place) {
  ways w;
  for (const auto s : sizes) {
    const auto whole = in_place && s >= page ? s / page * page : 0;
    const auto rest = s - whole;
    w.in_place += whole;
    w.bounced += (rest + page - 1) / page * page;
    w.copied += rest;
  }
  return w;
}

std::uint64_t readers_total(node& n, std::uint64_t reader_stats::*figure) {
  std::uint64_t total = 0;
  for (const auto& r : n.stats().readers) total += r.*figure;
  return total;
}

// Every reader holds `buffers` registered; false when registration fails here.
bool registered(node& n, std::uint64_t buffers) {
  return test::eventually([&] {
    for (const auto& r : n.stats().readers)
      if (r.registration_errno != 0 || r.registered_buffers != buffers) return false;
    return true;
  });
}

void check_exact(const caller_memory& memory, const std::vector<std::string>& keys,
                 const std::vector<key_status>& statuses, const std::vector<std::size_t>& got) {
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(statuses[k].ok(), keys[k], ": ", to_string(statuses[k]));
    CHECK(got[k] == sizes[k]);
    CHECK_MESSAGE(memory.holds(k, generated_value(sizes[k], 8, keys[k])), keys[k]);
  }
}

TEST_SUITE("read") {

// With the arena registered, a read into the caller's buffer is the only plain one when
// that buffer is aligned and not registered, and none is when it is registered too.
TEST_CASE_FIXTURE(test::node_leaks, "get_batch_into reads in place by the way its buffers allow") {
  test::temp_dir dir;
  node n{into_config(dir.path())};
  const auto keys = write_values(n);
  const bool uring = probe_uring().usable() && registered(n, 2);
  for (const std::string way : {"registered", "aligned", "unaligned"})
    SUBCASE(way.c_str()) {
      caller_memory memory{sizes, page, way == "unaligned" ? std::size_t{8} : 0};
      if (way == "registered") {
        n.register_memory(memory.base(), memory.size());
        if (uring) REQUIRE(registered(n, 3));
      }
      const auto before = ways_of(n);
      const auto fixed = readers_total(n, &reader_stats::reads_fixed);
      const auto plain = readers_total(n, &reader_stats::reads_plain);
      std::vector<std::size_t> got;
      const auto statuses = n.get_batch_into(keys, memory.buffers(), got);
      check_exact(memory, keys, statuses, got);
      CHECK(since(n, before) == expected(way != "unaligned"));
      const auto metric = "spillway_read_value_bytes_total{path=\"in_place\"} " +
                          std::to_string(ways_of(n).in_place) + "\n";
      CHECK(n.metrics().find(metric) != std::string::npos);
      const std::uint64_t in_place_reads = way == "unaligned" ? 0 : 5;  // all but the 100 B one
      const std::uint64_t bounce_reads = way == "unaligned" ? 6 : 4;     // 3 tails, the 100 B one
      if (uring) {
        const auto fixed_now = readers_total(n, &reader_stats::reads_fixed) - fixed;
        const auto plain_now = readers_total(n, &reader_stats::reads_plain) - plain;
        CHECK(plain_now == (way == "aligned" ? in_place_reads : 0));
        CHECK(fixed_now == bounce_reads + (way == "registered" ? in_place_reads : 0));
      }
      if (way == "registered") n.unregister_memory(memory.base());
      check_arena(n);
    }
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "get_batch_into names the size a too small buffer needs and leaves it untouched") {
  test::temp_dir dir;
  node n{into_config(dir.path())};
  const auto keys = write_values(n);
  std::vector<std::size_t> smaller;
  for (const auto s : sizes) smaller.push_back(s - 1);
  caller_memory memory{smaller, 0, 0};
  std::vector<std::size_t> got;
  const auto statuses = n.get_batch_into(keys, memory.buffers(), got);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    CHECK(statuses[k].error == key_error::too_large);
    CHECK(got[k] == sizes[k]);
    CHECK(memory.untouched(k, 0));
  }
  CHECK(ways_of(n) == ways{});
  check_arena(n);
}

// Flips one byte of `key`'s value on disk, `at` bytes into the value.
void corrupt(const std::filesystem::path& data, const std::string& key, std::uint64_t at) {
  for (const auto& entry : std::filesystem::directory_iterator(data)) {
    if (entry.path().extension() != ".bucket") continue;
    bucket_index index;
    REQUIRE(read_bucket_index(entry.path(), index).empty());
    for (const auto& e : index.entries) {
      if (e.key != key) continue;
      std::fstream file{entry.path(), std::ios::in | std::ios::out | std::ios::binary};
      const auto offset =
        static_cast<std::streamoff>(bucket_format::value_offset(e.offset, e.key.size()) + at);
      char byte = 0;
      file.seekg(offset).read(&byte, 1);
      file.seekp(offset).put(static_cast<char>(byte ^ 0x40));
      REQUIRE(file.good());
      return;
    }
  }
  FAIL("no bucket holds ", key);
}

// The flipped byte of a whole-page value lands in the caller's buffer (it was read in
// place) and still the key is corrupt; a split value whose tail is damaged is caught by
// the crc over both pieces, and its tail is never copied into the buffer.
TEST_CASE_FIXTURE(test::node_leaks, "a value corrupted on disk and read in place is corrupt") {
  test::temp_dir dir;
  const auto data = dir.path() / "data";
  std::vector<std::string> keys;
  {
    node n{into_config(data)};
    keys = write_values(n);
  }
  corrupt(data, keys[1], sizes[1] / 2);         // 128 KiB: whole pages, read in one piece
  corrupt(data, keys[2], 3 * 4096 + 50);        // the tail of 3 pages + 100 B
  node n{into_config(data)};
  caller_memory memory{sizes, page, 0};
  const auto before = ways_of(n);
  std::vector<std::size_t> got;
  const auto statuses = n.get_batch_into(keys, memory.buffers(), got);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (k == 1 || k == 2) {
      CHECK(statuses[k].error == key_error::corrupt);
      continue;
    }
    REQUIRE_MESSAGE(statuses[k].ok(), keys[k], ": ", to_string(statuses[k]));
    CHECK(memory.holds(k, generated_value(sizes[k], 8, keys[k])));
  }
  const auto whole = generated_value(sizes[1], 8, keys[1]);
  const auto landed = memory.buffers()[1];
  CHECK(static_cast<char>(landed[sizes[1] / 2]) == static_cast<char>(whole[sizes[1] / 2] ^ 0x40));
  CHECK(memory.untouched(2, 3 * 4096));
  CHECK(n.io().read_keys[static_cast<std::size_t>(key_error::corrupt)] == 2);
  CHECK(since(n, before).in_place == 4096 + (1887436 / page * page) + 4096);  // the ok ones
  check_arena(n);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
