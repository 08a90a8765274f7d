// Filesystem faults at the kernel boundary (DESIGN.md "Faults the runtime must
// survive"): a real node whose data dir is inside spillway-faultfs, each fault injected
// by the mount's rules, so the node sees the kernel's own completions. After each, every
// key is its exact bytes or its named error, the fault fs's counters prove the fault
// happened, nothing leaked, and a clean batch follows.
#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "runtime/node.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "tests/eventually.hpp"
#include "tests/faultfs_mount.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

constexpr std::size_t value_size = 256 << 10;  // records span many pages: a byte inside
                                               // one is in no other key's read

node_config config_on(const test::faultfs_mount& fs) {
  auto config = test::private_node(fs.mountpoint() / "data");
  config.storage.bucket_keys_limit = 8;
  config.read.readers = 2;
  config.read.arena_size = 64 << 20;
  config.read.arena_chunk = 32 << 20;
  return config;
}

// Keys written through the node and flushed; each value recomputable from its key.
struct dataset {
  std::vector<std::string> keys;

  void write(node& n, std::size_t count, const std::string& prefix) {
    std::vector<std::string> written, values;
    for (std::size_t i = 0; i < count; ++i) {
      written.push_back(generated_key(prefix, i));
      values.push_back(generated_value(value_size, 5, written.back()));
    }
    auto acked = n.put(written, std::move(values));
    n.flush();
    for (const auto& s : acked.get()) REQUIRE(s.ok());
    keys.insert(keys.end(), written.begin(), written.end());
  }
};

// Every key but `failed` holds exactly its bytes; `failed` has status `want`, no bytes.
void check_read(node& n, const std::vector<std::string>& keys, const std::string& failed = "",
                key_status want = {}) {
  const auto got = n.read_values(keys);
  REQUIRE(got.size() == keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] == failed) {
      CHECK_MESSAGE(got[k].status == want, keys[k], ": ", to_string(got[k].status));
      CHECK(got[k].value.empty());
      continue;
    }
    REQUIRE_MESSAGE(got[k].status.ok(), keys[k], ": ", to_string(got[k].status));
    CHECK_MESSAGE(got[k].value == generated_value(value_size, 5, keys[k]), keys[k]);
  }
}

// Where a rule hits `key`'s record and nothing else: its bucket file as the mount names
// it, and a byte in the middle of its value (found in the backing files' indexes).
struct record_spot {
  std::string path;
  std::uint64_t offset = 0;

  std::string rule(const std::string& words) const {
    return words + " path=" + path + " offset=" + std::to_string(offset) + "-" +
           std::to_string(offset + 1);
  }
};

record_spot spot_of(const test::faultfs_mount& fs, const std::string& key) {
  for (const auto& entry : std::filesystem::directory_iterator(fs.backing() / "data")) {
    if (entry.path().extension() != ".bucket") continue;
    bucket_index index;
    REQUIRE(read_bucket_index(entry.path(), index).empty());
    for (const auto& e : index.entries)
      if (e.key == key)
        return {"/data/" + entry.path().filename().string(), e.offset + e.value_size / 2};
  }
  FAIL("no bucket holds ", key);
  return {};
}

// The backing data dir's files whose name ends with `suffix`.
std::size_t files_ending(const test::faultfs_mount& fs, const std::string& suffix) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fs.backing() / "data"))
    n += entry.path().filename().string().ends_with(suffix);
  return n;
}

std::uint64_t short_reads(node& n) {
  std::uint64_t total = 0;
  for (const auto& r : n.stats().readers) total += r.short_reads;
  return total;
}

// After a fault: nothing leaked, and with the rules gone the same batch is clean.
void check_recovered(node& n, test::faultfs_mount& fs, const std::vector<std::string>& keys) {
  test::node_leaks::check_arena(n);
  fs.clear();
  check_read(n, keys);
  test::node_leaks::check_arena(n);
}

TEST_SUITE("fault") {

TEST_CASE_FIXTURE(test::node_leaks, "faultfs: EIO reading one key's record fails that key alone") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const std::string engine : {"uring", "posix"})
    SUBCASE(engine.c_str()) {
      auto config = config_on(fs);
      config.read.engine = engine;
      node n{config};
      dataset d;
      d.write(n, 12, "eio-" + engine + "-");
      const auto victim = d.keys[5];
      const auto rule = fs.add(spot_of(fs, victim).rule("op=read fault=eio count=1"));
      check_read(n, d.keys, victim, {key_error::io_error, EIO});
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
      auto refused = n.put({"full-0", "full-1"}, {generated_value(value_size, 5, "full-0"),
                                                  generated_value(value_size, 5, "full-1")});
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
      auto refused = n.put({"unsynced"}, {generated_value(value_size, 5, "unsynced")});
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
    SUBCASE(engine.c_str()) {
      auto config = config_on(fs);
      config.read.engine = engine;
      node n{config};
      dataset d;
      d.write(n, 12, "refused-" + engine + "-");
      CHECK_FALSE(n.store_stats().reads_buffered);
      const auto rule = fs.add("op=read direct=1 path=*.bucket fault=einval count=1");
      check_read(n, d.keys);
      CHECK(fs.injected(rule) == 1);
      CHECK(n.store_stats().reads_buffered);
      CHECK(n.store_stats().o_direct_refusals >= 1);
      check_recovered(n, fs, d.keys);
    }
}

// A disk that stops answering: the victim's read is held in the fault fs until released.
// A copying batch answers by its deadline, that key as timeout and the rest exact. A
// batch of views cannot hand out the lease the late read lands in: the call gives up at
// its own bound (twice read.timeout_ms), each key a named error. The node serves after.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a frozen read trips read.timeout_ms and the node serves after release") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const bool views : {false, true})
    SUBCASE(views ? "views" : "copying") {
      auto config = config_on(fs);
      config.read.timeout_ms = 500;
      node n{config};
      dataset d;
      d.write(n, 12, "frozen-");
      const auto victim = d.keys[6];
      const auto rule = fs.add(spot_of(fs, victim).rule("op=read fault=freeze"));
      auto pending = std::async(std::launch::async, [&] {
        if (!views) return n.read_values(d.keys);
        std::vector<read_value> got;
        const auto batch = n.get_batch(d.keys);
        for (const auto& v : batch.values())
          got.push_back({v.status, {reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()}});
        return got;
      });
      REQUIRE(test::eventually([&] { return fs.held(rule) == 1; }));
      // Twenty deadlines: a bound for a batch that never answers, not a synchronisation.
      const bool answered =
        pending.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
      CHECK_MESSAGE(answered, "no answer by read.timeout_ms with a read frozen");
      CHECK(fs.injected(rule) == 1);
      fs.clear();  // lets the frozen read go
      const auto got = pending.get();
      for (std::size_t k = 0; k < d.keys.size(); ++k) {
        const auto& status = got[k].status;
        if (d.keys[k] == victim || (views && !status.ok())) {
          CHECK_MESSAGE((status.error == key_error::timeout ||
                         (views && status.error == key_error::unavailable)),
                        d.keys[k], ": ", to_string(status));
          CHECK(got[k].value.empty());
          continue;
        }
        REQUIRE_MESSAGE(status.ok(), d.keys[k], ": ", to_string(status));
        CHECK(got[k].value == generated_value(value_size, 5, d.keys[k]));
      }
      check_read(n, d.keys);
      // The late read's lease went with a reply its caller had stopped waiting for: the
      // arena takes it back once it sees that caller gone.
      CHECK(test::eventually([&] { return n.read_stats().leases == 0; }));
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
  auto held_put = n.put({"late"}, {generated_value(value_size, 5, "late")});
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
