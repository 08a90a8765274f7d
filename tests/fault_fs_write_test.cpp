// Filesystem faults on the write path at the kernel boundary: a write failing with
// ENOSPC or EIO while a bucket is sealed, a failed fdatasync or directory fsync at seal,
// an fdatasync that never returns. Nothing is published that was not made durable.
#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tests/eventually.hpp"
#include "tests/fault_fs_fixture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

using test::check_read;
using test::config_on;
using test::dataset;
using test::files_ending;

TEST_SUITE("fault") {

// A write that fails while the bucket is sealed: a full disk (ENOSPC, the put answers
// no_space) or a failing one (EIO, io_error). The node goes on serving; the same keys
// go in once the fault is cleared.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a failed write while sealing fails the put by name and publishes nothing") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const bool full : {true, false})
    SUBCASE(full ? "ENOSPC" : "EIO") {
      node n{config_on(fs)};
      dataset d;
      d.write(n, 4, "before-");
      const auto rule = fs.add(full ? "op=write path=*.tmp fault=enospc"
                                    : "op=write path=*.tmp fault=eio");
      const key_status want =
        full ? key_status{key_error::no_space, ENOSPC} : key_status{key_error::io_error, EIO};
      auto refused = n.put({"full-0", "full-1"}, {test::value_of("full-0"),
                                                  test::value_of("full-1")});
      n.flush();
      for (const auto& s : refused.get()) CHECK_MESSAGE(s == want, to_string(s));
      CHECK(fs.injected(rule) >= 1);
      CHECK(n.exists({"full-0", "full-1"}) == std::vector<std::uint8_t>{0, 0});
      CHECK(n.store_stats().keys == d.keys.size());
      CHECK(files_ending(fs, ".tmp") == 0);
      check_read(n, d.keys);
      check_arena(n);
      fs.clear();
      d.write(n, 2, "full-");  // the same keys, now that the disk takes them
      check_read(n, d.keys);
      check_arena(n);
    }
}

// The seal's two syncs: the file's data (fdatasync of the .tmp) and its name (fsync of
// the data dir after the rename). Either failing, the put fails and no file is left.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a failed sync at seal fails the put and publishes nothing") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const std::string rule_words : {"op=fdatasync path=*.tmp", "op=fsyncdir path=/data"})
    SUBCASE(rule_words.c_str()) {
      node n{config_on(fs)};
      dataset d;
      d.write(n, 4, "synced-");
      const auto buckets = files_ending(fs, ".bucket");
      const auto rule = fs.add(rule_words + " fault=eio count=1");
      auto refused = n.put({"unsynced"}, {test::value_of("unsynced")});
      n.flush();
      const auto got = refused.get();
      CHECK_MESSAGE((got[0] == key_status{key_error::io_error, EIO}), to_string(got[0]));
      CHECK(fs.injected(rule) == 1);
      CHECK(n.exists({"unsynced"}) == std::vector<std::uint8_t>{0});
      CHECK(files_ending(fs, ".tmp") == 0);
      CHECK(files_ending(fs, ".bucket") == buckets);
      check_read(n, d.keys);
      check_arena(n);
      d.write(n, 1, "unsynced-");
      check_read(n, d.keys);
      check_arena(n);
    }
}

// A remove is answered once its forget-log entry is synced: a failed fdatasync of the
// log fails the remove by name and leaves the key served; the next remove goes through.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a remove whose forget log cannot be synced fails and the key stays") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  node n{config_on(fs)};
  dataset d;
  d.write(n, 4, "removed-");
  const auto rule = fs.add("op=fdatasync path=*/forget.log fault=eio count=1");
  CHECK_THROWS_WITH_AS(n.remove({d.keys[0]}), doctest::Contains("forget.log"),
                       std::runtime_error);
  CHECK(fs.injected(rule) == 1);
  CHECK(n.exists({d.keys[0]}) == std::vector<std::uint8_t>{1});
  check_read(n, d.keys);
  CHECK(n.remove({d.keys[0]}) == 1);
  CHECK(n.exists({d.keys[0]}) == std::vector<std::uint8_t>{0});
  check_arena(n);
}

// Found by the soak: a bucket whose seal failed after puts in it were acknowledged stayed
// open in the catalog for good, never sealed and never evicted, one more each time.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a bucket whose seal failed holding acknowledged keys is closed") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  // The seal's sync of the file, or of the dir after the rename (its first commit's
  // went before the rule), fails.
  for (const std::string rule_words : {"op=fdatasync path=*.tmp", "op=fsyncdir path=/data"})
    SUBCASE(rule_words.c_str()) {
      node n{config_on(fs)};
      std::vector<std::string> keys;
      for (const std::string key : {"kept-0", "kept-1", "later"}) {
        auto acked = n.put({key}, {test::value_of(key)});  // answered at its group commit
        REQUIRE(acked.get()[0].ok());
        keys.push_back(key);
        if (key == "later") break;
        const auto rule = fs.add(rule_words + " fault=eio count=1");
        n.flush();
        CHECK(fs.injected(rule) == 1);
        // Each kept under the name it is read by, for its acknowledged record.
        CHECK(files_ending(fs, ".tmp") == keys.size());
        CHECK(files_ending(fs, ".bucket") == 0);
      }
      CHECK(n.store_stats().open_buckets == 1);  // the writer's, and no other
      check_read(n, keys);
      check_arena(n);
    }
}

// A disk whose sync never returns: the put waits (it is answered only once durable),
// while reads of what is already sealed go on; released, the put is answered ok.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a frozen fdatasync holds its put but not the reads of sealed keys") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  node n{config_on(fs)};
  dataset d;
  d.write(n, 8, "sealed-");
  const auto rule = fs.add("op=fdatasync path=*.tmp fault=freeze count=1");
  auto held_put = n.put({"late"}, {test::value_of("late")});
  REQUIRE(test::eventually([&] { return fs.held(rule) == 1; }));
  auto reads = std::async(std::launch::async, [&] { return n.read_values(d.keys); });
  // A bound for reads stuck behind the writer, not a synchronisation.
  const bool served = reads.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  CHECK_MESSAGE(served, "reads waited for a frozen fdatasync");
  CHECK(held_put.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  fs.release();
  for (const auto& got : reads.get()) CHECK(got.status.ok());
  const auto acked = held_put.get();
  CHECK_MESSAGE(acked[0].ok(), to_string(acked[0]));
  CHECK(fs.injected(rule) == 1);
  d.keys.push_back("late");
  check_read(n, d.keys);
  check_arena(n);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
