// The data dir against its other users (issue 18, item 6): symlinks and FIFOs planted
// under the node's file names, file permissions, errors that are not damage, and the
// room quarantine/ takes.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>

#include "runtime/node.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/data_dir_lock.hpp"
#include "runtime/storage/recovery.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

unsigned mode_of(const fs::path& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Writes one sealed bucket of `keys` keys into `dir` through a node; returns its path.
fs::path write_bucket(const fs::path& dir, std::size_t keys = 1) {
  {
    node n{test::private_node(dir)};
    std::vector<std::string> names, values;
    for (std::size_t i = 0; i < keys; ++i) {
      names.push_back("key-" + std::to_string(i));
      values.push_back(std::string(3000, 'v'));
    }
    auto acked = n.put(names, std::move(values));
    n.flush();
    for (const auto& s : acked.get()) REQUIRE(s.ok());
  }
  for (const auto& e : fs::directory_iterator{dir})
    if (e.path().extension() == ".bucket") return e.path();
  FAIL("no bucket written");
  return {};
}

TEST_SUITE("data_dir") {

// A LOCK that is another file's name, by a symlink or (for root, or where
// fs.protected_hardlinks is off) a hard link, made the node truncate and overwrite that
// file: as root, any file.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a LOCK that names another file is refused, naming LOCK, and the file left whole") {
  using planting = void (*)(const fs::path& target, const fs::path& lock);
  for (const planting plant :
       {planting{[](const fs::path& t, const fs::path& l) { fs::create_symlink(t, l); }},
        planting{[](const fs::path& t, const fs::path& l) { fs::create_hard_link(t, l); }}}) {
    test::temp_dir dir;
    const auto target = dir.path() / "precious";
    std::ofstream{target} << "not the node's to truncate";
    const auto data = dir.path() / "data";
    fs::create_directory(data);
    plant(target, data / "LOCK");
    std::string error;
    try {
      data_dir_lock lock{data, 0600};
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    CHECK(contents(target) == "not the node's to truncate");
    CHECK_MESSAGE(error.find((data / "LOCK").string()) != std::string::npos, error);
  }
}

// A FIFO swapped in under a bucket's name after the directory scan blocked the open for
// good; the same open is made here on a FIFO that is there from the start.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a FIFO under a bucket's name is unreadable at once, never waited on") {
  test::temp_dir dir;
  const auto fifo = dir.path() / bucket_file_name(make_bucket_id(1, 5));
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto reading = std::async(std::launch::async, [&fifo] {
    bucket_index index;
    return read_bucket_index(fifo, index);
  });
  // A bound for a hung open, not a synchronisation: the answer needs no writer.
  const bool answered = reading.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!answered) {  // a writer that closes at once ends the blocked open, so the test ends
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  CHECK_MESSAGE(answered, "read_bucket_index blocked on a FIFO");
  const auto problem = reading.get();
  CHECK_FALSE(problem.empty());
  CHECK_FALSE(problem.damaged);
}

// Bucket files were found with a check that follows symlinks and opened following them:
// a link under a bucket's name was served (and evicting it unlinked the name).
TEST_CASE_FIXTURE(test::node_leaks,
                  "a symlink under a bucket's name is neither followed nor served") {
  test::temp_dir dir;
  const auto elsewhere = dir.path() / "elsewhere";
  const auto real = write_bucket(elsewhere);
  const auto data = dir.path() / "data";
  fs::create_directory(data);
  const auto link = data / real.filename();
  fs::create_symlink(real, link);
  const auto store = recover_data_dir(data, {});
  CHECK(store.buckets.empty());
  CHECK(fs::is_symlink(link));  // left where it is: nothing proves it damaged
  CHECK(fs::exists(real));
}

// Files were created 0644 and the dir followed the umask: other users read cached KV.
TEST_CASE_FIXTURE(test::node_leaks,
                  "the data dir is created 0700 and its files 0600 whatever the umask") {
  test::temp_dir dir;
  const auto old_umask = ::umask(022);
  const auto data = dir.path() / "data";
  const auto bucket = write_bucket(data);
  ::umask(old_umask);
  CHECK(mode_of(data) == 0700);
  CHECK(mode_of(data / "LOCK") == 0600);
  CHECK(mode_of(bucket) == 0600);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "storage.file_mode sets the files' mode and the dir's follows it") {
  test::temp_dir dir;
  auto config = test::private_node(dir.path() / "data");
  config.storage.file_mode = 0640;
  const auto old_umask = ::umask(022);
  {
    node n{config};
    auto acked = n.put({"k"}, {"v"});
    n.flush();
    CHECK(acked.get()[0].ok());
  }
  ::umask(old_umask);
  CHECK(mode_of(dir.path() / "data") == 0750);
  for (const auto& e : fs::directory_iterator{dir.path() / "data"})
    CHECK_MESSAGE(mode_of(e.path()) == 0640, e.path());
}

// Any open or read error counted as damage: with quarantine = false the bucket was
// deleted because the node had too many files open once.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a bucket that cannot be opened for now is left in place, not removed") {
  test::temp_dir dir;
  const auto bucket = write_bucket(dir.path());
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  const int lowest_free = ::dup(0);
  ::close(lowest_free);
  // One descriptor left: the directory scan's. Opening the bucket fails with EMFILE.
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free + 1);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  const auto store = recover_data_dir(dir.path(), {.quarantine = false});
  ::setrlimit(RLIMIT_NOFILE, &saved);
  CHECK(store.buckets.empty());
  CHECK(fs::exists(bucket));
  CHECK_FALSE(fs::exists(dir.path() / "quarantine" / bucket.filename()));
}

// Not in the review: a symlink named quarantine sent damaged files, and the values in
// them, wherever it pointed.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a quarantine symlink is not followed: the damaged file stays put") {
  test::temp_dir dir;
  const auto data = dir.path() / "data";
  const auto bucket = write_bucket(data);
  fs::resize_file(bucket, fs::file_size(bucket) - 4096);  // torn: damaged
  const auto elsewhere = dir.path() / "elsewhere";
  fs::create_directory(elsewhere);
  fs::create_symlink(elsewhere, data / "quarantine");
  const auto store = recover_data_dir(data, {});
  CHECK(store.rejected.size() == 1);
  CHECK(fs::is_empty(elsewhere));
  CHECK(fs::exists(bucket));
}

// quarantine/ grew without bound and outside storage.max_total_size.
TEST_CASE_FIXTURE(test::node_leaks,
                  "quarantine counts against the quota and is trimmed oldest first") {
  test::temp_dir dir;
  auto config = test::private_node(dir.path());
  config.storage.bucket_size_limit = 64 << 10;  // also the room kept for the open bucket
  config.storage.max_total_size = 256 << 10;
  config.storage.bucket_keys_limit = 2;
  fs::create_directory(dir.path() / "quarantine");
  std::vector<fs::path> quarantined;
  for (std::uint64_t sequence : {1, 2, 3}) {
    const auto name = bucket_file_name(make_bucket_id(1, sequence));
    quarantined.push_back(dir.path() / "quarantine" / name);
    std::ofstream{quarantined.back()} << std::string(100 << 10, 'q');
  }
  node n{config};
  CHECK_FALSE(fs::exists(quarantined[0]));
  CHECK_FALSE(fs::exists(quarantined[1]));
  CHECK(fs::exists(quarantined[2]));
  // 100 KiB of quarantine and 64 KiB kept free leave 92 KiB: one bucket of two 20 KiB
  // records, not two.
  for (const auto& keys : {std::vector<std::string>{"a", "b"}, {"c", "d"}}) {
    auto acked = n.put(keys, {std::string(20000, 'x'), std::string(20000, 'y')});
    n.flush();
    for (const auto& s : acked.get()) CHECK(s.ok());
  }
  CHECK(n.store_stats().evicted_buckets == 1);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
