// Filesystem faults on the read path at the kernel boundary (DESIGN.md "Faults the
// runtime must survive"): EIO and short reads on one key's record, O_DIRECT refused at
// open and at the first read (EIO and the refused read also for reads in place, into the
// caller's memory), a bucket unreadable at start. Each fault is injected by
// spillway-faultfs under a real node's data dir, and its rule's counter proves it was.
#include <doctest/doctest.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tests/fault_fs_fixture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

using test::check_read;
using test::check_read_into;
using test::check_recovered;
using test::config_on;
using test::dataset;
using test::files_ending;
using test::spot_of;

std::uint64_t short_reads(node& n) {
  std::uint64_t total = 0;
  for (const auto& r : n.stats().readers) total += r.short_reads;
  return total;
}

TEST_SUITE("fault") {

TEST_CASE_FIXTURE(test::node_leaks, "faultfs: EIO reading one key's record fails that key alone") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const std::string engine : {"uring", "posix"})
    for (const bool in_place : {false, true})
      SUBCASE((engine + (in_place ? " in place" : "")).c_str()) {
        auto config = config_on(fs);
        config.read.engine = engine;
        node n{config};
        dataset d;
        d.write(n, 12, "eio-" + engine + "-");
        const auto victim = d.keys[5];
        const auto rule = fs.add(spot_of(fs, victim).rule("op=read fault=eio count=1"));
        (in_place ? check_read_into : check_read)(n, d.keys, victim, {key_error::io_error, EIO});
        CHECK(fs.injected(rule) == 1);
        check_recovered(n, fs, d.keys);
      }
}

// The readers' rule: a short read goes again once for its remainder; short twice, the
// file ends inside the record as far as they can tell, and the key is EIO. Only an
// asynchronous O_DIRECT read (io_uring) shows the node a short count: a synchronous one
// (pread) the kernel completes itself through the page cache, and there fuse takes a
// short answer for the end of the file.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a short read is read again and twice short it is EIO: never wrong bytes") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const bool once : {true, false})
    SUBCASE(once ? "once" : "every time") {
      node n{config_on(fs)};
      dataset d;
      d.write(n, 12, "short-");
      const auto victim = d.keys[3];
      const auto rule = fs.add(spot_of(fs, victim).rule(once ? "op=read fault=short count=1"
                                                              : "op=read fault=short"));
      if (once) check_read(n, d.keys);
      else check_read(n, d.keys, victim, {key_error::io_error, EIO});
      CHECK(fs.injected(rule) == (once ? 1 : 2));
      CHECK(short_reads(n) == 1);
      check_recovered(n, fs, d.keys);
    }
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a short pread the kernel completes through the page cache") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  auto config = config_on(fs);
  config.read.engine = "posix";
  node n{config};
  dataset d;
  d.write(n, 12, "short-pread-");
  const auto rule = fs.add(spot_of(fs, d.keys[3]).rule("op=read fault=short count=1"));
  check_read(n, d.keys);
  CHECK(fs.injected(rule) == 1);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: O_DIRECT refused at open: writer and buckets go through the page cache") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  const auto writer_rule = fs.add("op=open direct=1 path=*.tmp fault=einval");
  const auto bucket_rule = fs.add("op=open direct=1 path=*.bucket fault=einval");
  node n{config_on(fs)};
  dataset d;
  d.write(n, 12, "buffered-");
  check_read(n, d.keys);
  CHECK(fs.injected(writer_rule) >= 1);
  CHECK(fs.injected(bucket_rule) >= 1);
  CHECK(n.store_stats().reads_buffered);
  CHECK(n.store_stats().o_direct_refusals >= 1);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: O_DIRECT refused at the first read: the read goes again buffered") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const std::string engine : {"uring", "posix"})
    for (const bool in_place : {false, true})
      SUBCASE((engine + (in_place ? " in place" : "")).c_str()) {
        auto config = config_on(fs);
        config.read.engine = engine;
        node n{config};
        dataset d;
        d.write(n, 12, "refused-" + engine + "-");
        CHECK_FALSE(n.store_stats().reads_buffered);
        const auto rule = fs.add("op=read direct=1 path=*.bucket fault=einval count=1");
        (in_place ? check_read_into : check_read)(n, d.keys, "", {});
        CHECK(fs.injected(rule) == 1);
        CHECK(n.store_stats().reads_buffered);
        CHECK(n.store_stats().o_direct_refusals >= 1);
        check_recovered(n, fs, d.keys);
      }
}

// Recovery reads every bucket's footer and index: one that fails with EIO is no proof of
// damage, so it stays where it is (not quarantined), its keys are missing for now, and
// the next start, the disk healed, serves them again.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a bucket unreadable at start stays in place and serves at the next start") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  dataset d;
  {
    node n{config_on(fs)};
    d.write(n, 16, "restart-");  // two buckets of 8
  }
  const auto spot = spot_of(fs, d.keys[0]);
  const auto rule = fs.add("op=read fault=eio path=" + spot.path);
  std::vector<std::string> lost, kept;
  for (const auto& key : d.keys) (spot_of(fs, key).path == spot.path ? lost : kept).push_back(key);
  REQUIRE(lost.size() == 8);
  {
    node n{config_on(fs)};
    CHECK(fs.injected(rule) >= 1);
    for (const auto& got : n.read_values(lost))
      CHECK_MESSAGE(got.status.error == key_error::not_found, to_string(got.status));
    check_read(n, kept);
    check_arena(n);
  }
  CHECK(std::filesystem::exists(fs.backing() / spot.path.substr(1)));
  CHECK(files_ending(fs, ".bucket") == 2);
  fs.clear();
  node n{config_on(fs)};
  check_read(n, d.keys);
  check_arena(n);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
