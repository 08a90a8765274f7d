// Removes and evictions survive restarts (runtime/storage/forget_log.hpp): a removed key
// never comes back, an evicted newest value never gives way to an older one, and a
// damaged or torn forget log costs no more than the entries it lost.
#include <doctest/doctest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "runtime/node.hpp"
#include "runtime/storage/forget_log.hpp"
#include "runtime/storage/store_inspection.hpp"
#include "tests/eventually.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t value_size = 16 << 10;

// Buckets of two 16 KiB values (52 KiB on disk) under a 300 KiB quota with 64 KiB kept
// for the bucket being written: four fit, a fifth evicts one. Open buckets stay open
// until a flush, so a test decides what shares a bucket.
node_config small_store(const fs::path& dir, const char* eviction = "fifo") {
  auto c = test::private_node(dir);
  c.read.readers = 1;
  c.storage.bucket_keys_limit = 2;
  c.storage.bucket_size_limit = 64 << 10;
  c.storage.max_total_size = 300 << 10;
  c.storage.eviction = eviction;
  c.storage.seal_after_ms = 3600000;
  return c;
}

std::string value_of(const std::string& key, std::uint64_t version) {
  return generated_value(value_size, version, key);
}

void put(node& n, const std::vector<std::string>& keys, std::uint64_t version) {
  std::vector<std::string> values;
  for (const auto& k : keys) values.push_back(value_of(k, version));
  for (const auto& s : n.put(keys, std::move(values)).get()) REQUIRE(s.ok());
}

// The version of `key`'s value a read returns; 0 for not_found.
std::uint64_t version_read(node& n, const std::string& key, std::uint64_t newest) {
  const auto got = n.read_values({key})[0];
  if (got.status.error == key_error::not_found) return 0;
  REQUIRE_MESSAGE(got.status.ok(), key, ": ", to_string(got.status));
  for (std::uint64_t v = 1; v <= newest; ++v)
    if (got.value == value_of(key, v)) return v;
  FAIL(key, ": a value it never had");
  return 0;
}

// Eviction notices, waited for without sleeping.
struct evictions {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> keys;

  void listen(node& n) {
    n.on_evicted([this](std::vector<std::string> evicted) {
      std::lock_guard lock{mutex};
      keys.insert(keys.end(), evicted.begin(), evicted.end());
      changed.notify_all();
    });
  }
  bool wait_for(const std::string& key) {
    std::unique_lock lock{mutex};
    return changed.wait_for(lock, std::chrono::seconds(30), [&] {
      return std::find(keys.begin(), keys.end(), key) != keys.end();
    });
  }
};

void flip_byte(const fs::path& file, std::uint64_t offset) {
  std::fstream f{file, std::ios::in | std::ios::out | std::ios::binary};
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  f.seekp(static_cast<std::streamoff>(offset));
  c ^= 0x20;
  f.write(&c, 1);
}

TEST_SUITE("store") {

TEST_CASE_FIXTURE(test::node_leaks, "a removed key stays removed after a restart") {
  test::temp_dir dir;
  {
    node n{small_store(dir.path())};
    put(n, {"sealed", "kept"}, 1);  // a bucket of two: sealed at its limit
    put(n, {"open"}, 1);            // still in the open bucket's .tmp
    CHECK(n.remove({"sealed", "open", "never-put"}) == 2);
    CHECK(n.store_stats().forget_entries_written == 3);
    CHECK(version_read(n, "sealed", 1) == 0);
  }
  node again{small_store(dir.path())};
  CHECK(version_read(again, "sealed", 1) == 0);
  CHECK(version_read(again, "open", 1) == 0);
  CHECK(version_read(again, "kept", 1) == 1);
  CHECK(again.store_stats().forget_records_dropped == 2);  // their records were on disk
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a put after a remove into the same open bucket survives a restart") {
  test::temp_dir dir;
  {
    node n{small_store(dir.path())};
    put(n, {"k"}, 1);
    CHECK(n.remove({"k"}) == 1);
    put(n, {"k"}, 2);
    const auto s = n.store_stats();
    // Both records in one bucket (sealed at its second): a bucket id alone could not
    // tell the one before the remove from the one after.
    REQUIRE(s.open_buckets + s.buckets == 1);
    CHECK(version_read(n, "k", 2) == 2);
  }
  node again{small_store(dir.path())};
  CHECK(version_read(again, "k", 2) == 2);
  CHECK(again.store_stats().forget_records_dropped == 1);  // v1's
}

// The soak's case: LRU evicts the bucket of k's newest value before the one of its older.
TEST_CASE_FIXTURE(test::node_leaks,
                  "an evicted newest value never gives way to an older one after a restart") {
  test::temp_dir dir;
  {
    evictions heard;
    node n{small_store(dir.path(), "lru")};
    heard.listen(n);
    put(n, {"k", "old-neighbour"}, 1);   // bucket 0: k = v1
    put(n, {"k", "new-neighbour"}, 2);   // bucket 1: k = v2, v1 is garbage
    CHECK(version_read(n, "old-neighbour", 1) == 1);  // bucket 0 read last: bucket 1 is LRU
    for (int b = 2; b < 5; ++b)
      put(n, {"fill-" + std::to_string(b) + "-a", "fill-" + std::to_string(b) + "-b"}, 1);
    REQUIRE(heard.wait_for("k"));
    CHECK(heard.wait_for("new-neighbour"));
    CHECK(version_read(n, "old-neighbour", 1) == 1);  // bucket 0, with v1, is still there
    CHECK(version_read(n, "k", 2) == 0);
    // Told at once, durable a commit later: the file goes then.
    CHECK(test::eventually([&] { return n.store_stats().forget_entries_written == 2; }));
  }
  node again{small_store(dir.path(), "lru")};
  CHECK(version_read(again, "k", 2) == 0);  // v2 or nothing: here nothing, never v1
  CHECK(version_read(again, "old-neighbour", 1) == 1);
  CHECK(again.store_stats().forget_records_dropped == 1);  // v1, in bucket 0
}

// A bucket evicted while a read pins it is unlinked when the pin goes: a node that stops
// first leaves its file. Here the file is put back after the unlink, as a crash between
// eviction and unlink leaves it.
TEST_CASE_FIXTURE(test::node_leaks,
                  "keys evicted from a bucket whose file outlives the node stay gone") {
  test::temp_dir dir;
  const auto saved = dir.path() / "saved";
  fs::path first_bucket;
  {
    evictions heard;
    node n{small_store(dir.path() / "data")};
    heard.listen(n);
    put(n, {"a", "b"}, 1);
    for (const auto& e : fs::directory_iterator{dir.path() / "data"})
      if (e.path().extension() == ".bucket") first_bucket = e.path();
    REQUIRE(!first_bucket.empty());
    fs::copy_file(first_bucket, saved);
    for (int b = 1; b < 5; ++b)
      put(n, {"fill-" + std::to_string(b) + "-a", "fill-" + std::to_string(b) + "-b"}, 1);
    REQUIRE(heard.wait_for("a"));
    REQUIRE(test::eventually([&] { return !fs::exists(first_bucket); }));
  }
  fs::copy_file(saved, first_bucket);
  node again{small_store(dir.path() / "data")};
  CHECK(version_read(again, "a", 1) == 0);
  CHECK(version_read(again, "b", 1) == 0);
  CHECK(again.store_stats().forget_records_dropped == 2);
  // A bucket whose records are all dead holds nothing to serve: it goes.
  CHECK(test::eventually([&] { return !fs::exists(first_bucket); }));
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a torn forget log tail is dropped and the entries before it hold") {
  test::temp_dir dir;
  {
    node n{small_store(dir.path())};
    put(n, {"gone", "kept"}, 1);
    CHECK(n.remove({"gone"}) == 1);
  }
  const auto log = dir.path() / forget_log_name;
  const auto whole = fs::file_size(log);
  std::ofstream{log, std::ios::app | std::ios::binary} << "\x09\x08\x07 torn";
  const auto seen = inspect_store(dir.path(), false);
  CHECK(seen.forget_torn_bytes == 8);
  CHECK(seen.forget_entries == 1);
  CHECK(seen.forget_damaged.empty());
  node again{small_store(dir.path())};
  CHECK(version_read(again, "gone", 1) == 0);
  CHECK(version_read(again, "kept", 1) == 1);
  CHECK(fs::file_size(log) == whole);  // compacted: the tail cut
}

// What a damaged entry costs, on purpose: its own removal (logged with its offset), not
// any value the store still holds.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a damaged forget log entry is named and loses only its own removal") {
  test::temp_dir dir;
  {
    node n{small_store(dir.path())};
    put(n, {"first", "live"}, 1);  // a live key in each bucket keeps its file
    put(n, {"second", "live-too"}, 1);
    CHECK(n.remove({"first"}) == 1);  // two commits: two entries, in order
    CHECK(n.remove({"second"}) == 1);
  }
  const auto first_entry = forget_format::header_size;
  flip_byte(dir.path() / forget_log_name, first_entry + forget_format::entry_header_size);
  const auto seen = inspect_store(dir.path(), false);
  REQUIRE(seen.forget_damaged.size() == 1);
  CHECK(seen.forget_damaged[0].rfind("offset 16: ", 0) == 0);
  CHECK(seen.forget_entries == 1);
  node again{small_store(dir.path())};
  CHECK(version_read(again, "first", 1) == 1);  // its removal lost with its entry
  CHECK(version_read(again, "second", 1) == 0);
  CHECK(version_read(again, "live", 1) == 1);
  CHECK(version_read(again, "live-too", 1) == 1);
  CHECK(again.store_stats().forget_records_dropped == 1);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a forget log that cannot be read keeps the node from starting") {
  test::temp_dir dir;
  {
    node n{small_store(dir.path())};
    put(n, {"a", "b"}, 1);
  }
  fs::create_directory(dir.path() / forget_log_name);
  try {
    node n{small_store(dir.path())};
    FAIL("the node started");
  } catch (const startup_error& e) {
    CHECK(std::string{e.what()}.find(forget_log_name) != std::string::npos);
  }
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
