// The bucket store through a real node: real files, real io_uring writes, real actors.
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/bucket_writer.hpp"
#include "tools/generated_value.hpp"
#include "runtime/node.hpp"
#include "runtime/storage/store_inspection.hpp"
#include "tests/crafted_bucket.hpp"
#include "tests/eventually.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

node_config store_config(const std::filesystem::path& dir) {
  auto config = test::private_node(dir);
  config.read.readers = 1;
  return config;
}

std::vector<key_status> put_all(node& n, const std::vector<std::string>& keys,
                                std::size_t size, std::uint64_t seed = 1) {
  std::vector<std::string> values;
  for (const auto& k : keys) values.push_back(generated_value(size, seed, k));
  auto result = n.put(keys, std::move(values));
  n.flush();
  return result.get();
}

std::vector<std::string> make_keys(const std::string& prefix, std::size_t count) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < count; ++i) keys.push_back(generated_key(prefix, i));
  return keys;
}

// Every key reads back as exactly the generated value of `size` bytes.
void check_values(node& n, const std::vector<std::string>& keys, std::size_t size,
                  std::uint64_t seed = 1) {
  const auto got = n.read_values(keys);
  REQUIRE(got.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    REQUIRE_MESSAGE(got[i].status.ok(), keys[i], ": ", to_string(got[i].status));
    CHECK_MESSAGE(got[i].value == generated_value(size, seed, keys[i]), keys[i]);
  }
}

std::size_t count_buckets(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator{dir})
    n += e.path().extension() == ".bucket";
  return n;
}

// Collects eviction notices; waits for them without sleeping.
struct eviction_log {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> keys;

  void add(std::vector<std::string> evicted) {
    std::lock_guard lock{mutex};
    keys.insert(keys.end(), evicted.begin(), evicted.end());
    changed.notify_all();
  }
  bool wait_for(std::size_t n) {
    std::unique_lock lock{mutex};
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return keys.size() >= n; });
  }
};

TEST_SUITE("store") {

TEST_CASE_FIXTURE(test::node_leaks, "values of many sizes round trip through put and read") {
  test::temp_dir dir;
  node n{store_config(dir.path())};
  for (std::size_t size : {0ul, 1ul, 4071ul, 4072ul, 4096ul, 100000ul, 5ul << 20}) {
    const auto keys = make_keys("size-" + std::to_string(size) + "-", 3);
    for (const auto& s : put_all(n, keys, size)) CHECK(s.ok());
    check_values(n, keys, size);
  }
  CHECK(n.read_values({"never-written"})[0].status.error == key_error::not_found);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "bad keys fail alone and name their error") {
  test::temp_dir dir;
  node n{store_config(dir.path())};
  const std::string long_key(5000, 'k');
  auto result = n.put({"good", "", long_key}, {"v", "v", "v"});
  n.flush();
  const auto statuses = result.get();
  CHECK(statuses[0].ok());
  CHECK(statuses[1].error == key_error::bad_key);
  CHECK(statuses[2].error == key_error::too_large);
  CHECK(n.read_values({"good"})[0].value == "v");
  CHECK_THROWS_AS(n.put({"a", "b"}, {"1"}), std::invalid_argument);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a key put twice in one batch or across batches reads its newest value") {
  test::temp_dir dir;
  node n{store_config(dir.path())};
  auto first = n.put({"k", "other", "k"}, {"one", "x", "two"});
  n.flush();
  for (const auto& s : first.get()) CHECK(s.ok());
  CHECK(n.read_values({"k"})[0].value == "two");
  auto second = n.put({"k"}, {"three"});
  n.flush();
  CHECK(second.get()[0].ok());
  CHECK(n.read_values({"k"})[0].value == "three");
  const auto stats = n.store_stats();
  CHECK(stats.keys == 2);
  CHECK(stats.garbage_bytes == 3 + 3);  // "one" and "two" were replaced
  CHECK(stats.live_bytes == 5 + 1);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "buckets seal at the key limit and the store survives a restart") {
  test::temp_dir dir;
  auto config = store_config(dir.path());
  config.storage.bucket_keys_limit = 3;
  const auto keys = make_keys("restart-", 10);
  catalog_stats before;
  {
    node n{config};
    for (const auto& s : put_all(n, keys, 10000)) CHECK(s.ok());
    before = n.store_stats();
  }
  CHECK(count_buckets(dir.path()) == 4);
  node again{config};
  check_values(again, keys, 10000);
  const auto after = again.store_stats();
  CHECK(after.keys == before.keys);
  CHECK(after.buckets == 4);
  CHECK(after.file_bytes == before.file_bytes);
  check_arena(again);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a damaged or torn bucket is quarantined at start and the rest still serves") {
  test::temp_dir dir;
  auto config = store_config(dir.path());
  config.storage.bucket_keys_limit = 2;
  const auto keys = make_keys("torn-", 4);
  {
    node n{config};
    for (const auto& s : put_all(n, keys, 5000)) CHECK(s.ok());
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator{dir.path()})
    if (e.path().extension() == ".bucket") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 2);
  std::filesystem::resize_file(files[1], std::filesystem::file_size(files[1]) - 4096);
  std::ofstream{dir.path() / bucket_tmp_name(make_bucket_id(1, 1))} << "half a write";

  node n{config};
  check_values(n, {keys[0], keys[1]}, 5000);
  CHECK(n.read_values({keys[2]})[0].status.error == key_error::not_found);
  CHECK(n.store_stats().buckets == 1);
  CHECK(std::filesystem::exists(dir.path() / "quarantine" / files[1].filename()));
  CHECK(std::filesystem::exists(dir.path() / "quarantine" / bucket_tmp_name(make_bucket_id(1, 1))));
  check_arena(n);
}

// Two sealed buckets of two keys each, written by a node that is gone again: the
// ground a crafted file is planted in.
struct two_buckets {
  test::temp_dir dir;
  node_config config = store_config(dir.path());
  std::vector<std::string> keys;
  std::vector<std::filesystem::path> files;  // in id order: keys 0 and 1, then 2 and 3

  explicit two_buckets(const std::string& prefix) : keys(make_keys(prefix, 4)) {
    config.storage.bucket_keys_limit = 2;
    {
      node n{config};
      for (const auto& s : put_all(n, keys, 5000)) CHECK(s.ok());
    }
    for (const auto& e : std::filesystem::directory_iterator{dir.path()})
      if (e.path().extension() == ".bucket") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() == 2);
  }

  bool quarantined(const std::filesystem::path& file) const {
    return std::filesystem::exists(dir.path() / "quarantine" / file.filename());
  }
};

// Issue 18, item 7: a footer with a valid crc and an index size near 2^64 made the
// node's constructor throw (the index allocation), so no node could start on the dir.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a crafted index size is quarantined at start and the node serves the rest") {
  two_buckets store{"huge-index-"};
  test::recraft_bucket(store.files[1], [](bucket_index& b) {
    b.footer.index_offset = b.file_size - bucket_format::page_size;
    b.footer.index_size = UINT64_MAX - 100;  // align_up() of it wraps to 0
  });
  std::optional<node> n;
  REQUIRE_NOTHROW(n.emplace(store.config));
  check_values(*n, {store.keys[0], store.keys[1]}, 5000);
  CHECK(n->read_values({store.keys[2]})[0].status.error == key_error::not_found);
  CHECK(store.quarantined(store.files[1]));
}

// Issue 18, item 7: an index entry at offset 2^64-4096 wrapped `offset + record size`,
// passed recovery, and its read's EINVAL was taken for an O_DIRECT refusal: every
// bucket went to buffered reads for the node's life.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a crafted record offset is quarantined at start and reads stay direct") {
  two_buckets store{"wrapped-offset-"};
  test::recraft_bucket(store.files[1], [](bucket_index& b) {
    b.entries[1].offset = UINT64_MAX - bucket_format::page_size + 1;
  });
  node n{store.config};
  const auto got = n.read_values({store.keys[0], store.keys[3]});
  CHECK(got[0].value == generated_value(5000, 1, store.keys[0]));
  CHECK(got[1].status.error == key_error::not_found);
  CHECK_FALSE(n.store_stats().reads_buffered);
  CHECK(store.quarantined(store.files[1]));
}

// The process's mapped bytes, from /proc/self/statm (its first field, in pages).
std::uint64_t mapped_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  std::uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Issue 18, item 10: the writer's buffer for records larger than a staging slot only
// grew: one 4 GiB value kept 4 GiB mapped for the node's life.
TEST_CASE("the writer unmaps a large value's buffer once the value is written") {
  test::temp_dir dir;
  bucket_writer writer{{dir.path()}};
  // The value lives through both measures: freed, it could stay mapped in the
  // allocator (ASan keeps freed memory aside), and only the writer's buffer is asked about.
  const std::vector<std::byte> value(64 << 20, std::byte{7});
  const auto before = mapped_bytes();
  REQUIRE_FALSE(writer.open(make_bucket_id(1, 1)));
  REQUIRE_FALSE(writer.append("large", value));
  bucket_index sealed;
  REQUIRE_FALSE(writer.seal(sealed));
  CHECK(sealed.entries.size() == 1);
  const auto grown = mapped_bytes() - std::min(before, mapped_bytes());
  CHECK_MESSAGE(grown < (32u << 20), "still mapped after the seal: ", grown >> 20, " MiB");
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a flipped byte in a value makes that key corrupt and never returns it"
                  * doctest::test_suite("fault")) {
  test::temp_dir dir;
  auto config = store_config(dir.path());
  const auto keys = make_keys("flip-", 3);
  {
    node n{config};
    for (const auto& s : put_all(n, keys, 20000)) CHECK(s.ok());
  }
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator{dir.path()})
    if (e.path().extension() == ".bucket") file = e.path();
  bucket_index index;
  REQUIRE(read_bucket_index(file, index).empty());
  {
    std::fstream f{file, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(static_cast<std::streamoff>(
      bucket_format::value_offset(index.entries[1].offset, index.entries[1].key.size()) + 5000));
    f.put('\xff');
  }
  const auto report = inspect_store(dir.path(), true);
  REQUIRE(report.bad_records.size() == 1);
  CHECK(report.bad_records[0].key == index.entries[1].key);

  node n{config};
  const auto got = n.read_values(keys);
  std::size_t corrupt = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == index.entries[1].key) {
      CHECK(got[i].status.error == key_error::corrupt);
      CHECK(got[i].value.empty());
      ++corrupt;
    } else {
      CHECK(got[i].value == generated_value(20000, 1, keys[i]));
    }
  }
  CHECK(corrupt == 1);
  check_arena(n);
}

// The descriptors that name one of the data dir's bucket files, in this process.
std::size_t open_bucket_files(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& fd : std::filesystem::directory_iterator{"/proc/self/fd"}) {
    std::error_code gone;  // the iterator's own descriptor, or one closed meanwhile
    const auto target = std::filesystem::read_symlink(fd.path(), gone);
    n += !gone && target.parent_path() == dir && target.extension() == ".bucket";
  }
  return n;
}

// Many small buckets: the catalog keeps storage.max_open_files of them open, a batch
// over all of them opens each again on demand, and afterwards the least recently read
// are closed until the bound holds again.
TEST_CASE_FIXTURE(test::node_leaks,
                  "bucket files held open stay within storage.max_open_files and reopen on demand") {
  test::temp_dir dir;
  auto config = store_config(dir.path());
  config.storage.bucket_keys_limit = 1;
  config.storage.max_open_files = 16;
  const auto data_dir = std::filesystem::canonical(dir.path());
  const auto keys = make_keys("fd-", 40);
  {
    node n{config};
    for (const auto& s : put_all(n, keys, 4096)) CHECK(s.ok());
    CHECK(n.store_stats().buckets == 40);
    CHECK(n.store_stats().open_files == 16);
    CHECK(test::eventually([&] { return open_bucket_files(data_dir) <= 16; }));
  }
  node n{config};  // recovery opens the first 16 only
  CHECK(n.store_stats().open_files == 16);
  check_values(n, keys, 4096);  // one batch over all 40: each opens its file
  CHECK(n.store_stats().open_files == 40);
  check_values(n, {keys[0]}, 4096);  // the next resolve closes the others down to 16
  CHECK(n.store_stats().open_files == 16);
  CHECK(test::eventually([&] { return open_bucket_files(data_dir) == 16; }));
  check_values(n, keys, 4096);  // and they open again
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "removed keys are gone and an emptied bucket leaves the disk") {
  test::temp_dir dir;
  node n{store_config(dir.path())};
  const auto keys = make_keys("rm-", 3);
  for (const auto& s : put_all(n, keys, 1000)) CHECK(s.ok());
  CHECK(n.exists({keys[0], "nope"}) == std::vector<std::uint8_t>{1, 0});
  CHECK(n.remove({keys[0], "nope"}) == 1);
  CHECK(n.read_values({keys[0]})[0].status.error == key_error::not_found);
  CHECK(n.remove({keys[1], keys[2]}) == 2);
  CHECK(n.store_stats().buckets == 0);
  check_arena(n);
  n.stop();  // the bucket actor unlinks the file before it stops
  CHECK(count_buckets(dir.path()) == 0);
}

// Buckets of two 16 KiB values each (52 KiB on disk: header, two 20 KiB records,
// index, footer) under a 300 KiB quota, with 64 KiB kept for the bucket being
// written: four buckets fit, a fifth does not.
struct quota_store {
  static constexpr std::size_t value_size = 16 << 10;
  test::temp_dir dir;
  eviction_log evicted;  // before the node: it must outlive the node's callbacks
  node store;

  explicit quota_store(const char* policy) : store{config(dir.path(), policy)} {
    store.on_evicted([this](std::vector<std::string> keys) { evicted.add(std::move(keys)); });
  }

  static node_config config(const std::filesystem::path& dir, const char* policy) {
    auto c = store_config(dir);
    c.storage.bucket_keys_limit = 2;
    c.storage.bucket_size_limit = 64 << 10;
    c.storage.max_total_size = 300 << 10;
    c.storage.eviction = policy;
    return c;
  }

  // Puts one bucket's worth of keys; returns them.
  std::vector<std::string> add_bucket(const std::string& prefix) {
    auto keys = make_keys(prefix, 2);
    for (const auto& s : put_all(store, keys, value_size)) CHECK(s.ok());
    return keys;
  }

  std::vector<std::string> evicted_keys() {
    std::lock_guard lock{evicted.mutex};
    auto keys = evicted.keys;
    std::sort(keys.begin(), keys.end());
    return keys;
  }
};

TEST_CASE_FIXTURE(test::node_leaks,
                  "fifo eviction drops the oldest bucket and says which keys went") {
  quota_store q{"fifo"};
  std::vector<std::vector<std::string>> buckets;
  for (int b = 0; b < 6; ++b) buckets.push_back(q.add_bucket("fifo-" + std::to_string(b) + "-"));
  REQUIRE(q.evicted.wait_for(4));
  auto oldest = buckets[0];
  oldest.insert(oldest.end(), buckets[1].begin(), buckets[1].end());
  CHECK(q.evicted_keys() == oldest);
  CHECK(q.store.read_values({buckets[0][0]})[0].status.error == key_error::not_found);
  check_values(q.store, buckets[5], q.value_size);
  const auto stats = q.store.store_stats();
  CHECK(stats.file_bytes + (64 << 10) <= stats.quota_bytes);
  CHECK(stats.evicted_buckets == 2);
  check_arena(q.store);
}

TEST_CASE_FIXTURE(test::node_leaks, "lru eviction spares the bucket read most recently") {
  quota_store q{"lru"};
  std::vector<std::vector<std::string>> buckets;
  for (int b = 0; b < 4; ++b) buckets.push_back(q.add_bucket("lru-" + std::to_string(b) + "-"));
  check_values(q.store, buckets[0], q.value_size);  // bucket 0: now the most recently read
  q.add_bucket("lru-4-");
  REQUIRE(q.evicted.wait_for(2));
  CHECK(q.evicted_keys() == buckets[1]);
  check_values(q.store, buckets[0], q.value_size);
  check_arena(q.store);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a full disk fails the put cleanly and publishes nothing and serving goes on") {
  test::temp_dir dir;
  const auto mount_point = dir.path() / "small";
  std::filesystem::create_directory(mount_point);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=1m") != 0) {
    return test::skip_test(std::string{"this machine refuses to mount a tmpfs ("} +
                           std::strerror(errno) + ")");
  }
  struct unmount_at_end {
    std::filesystem::path path;
    ~unmount_at_end() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mount_point};
  auto config = store_config(mount_point);
  config.storage.max_total_size = 64 << 20;  // the quota must not stop it first
  node n{config};
  const auto fits = make_keys("fits-", 2);
  for (const auto& s : put_all(n, fits, 100 << 10)) CHECK(s.ok());
  const auto too_much = make_keys("too-much-", 10);
  const auto statuses = put_all(n, too_much, 100 << 10);
  std::size_t failed = 0;
  for (const auto& s : statuses) {
    if (s.ok()) continue;
    CHECK(s.error == key_error::no_space);
    CHECK(s.sys_errno == ENOSPC);
    ++failed;
  }
  CHECK(failed == too_much.size());  // one bucket: all of it fails together
  CHECK(n.exists(too_much) == std::vector<std::uint8_t>(too_much.size(), 0));
  check_values(n, fits, 100 << 10);
  for (const auto& e : std::filesystem::directory_iterator{mount_point})
    CHECK_MESSAGE(e.path().extension() != ".tmp", e.path());

  CHECK(n.remove(fits) == 2);
  check_arena(n);
  n.stop();  // waits for every actor: the emptied bucket's file is gone, space is back
  node again{config};
  const auto later = make_keys("later-", 3);
  for (const auto& s : put_all(again, later, 100 << 10)) CHECK(s.ok());
  check_values(again, later, 100 << 10);
  check_arena(again);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
