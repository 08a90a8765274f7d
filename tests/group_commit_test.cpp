// Group commit through a real node: a put is answered once its keys are durable in the
// open bucket's .tmp and readable, while the bucket stays open to fill; keys there are
// overwritten and removed as in a sealed one, and the seal moves them without a gap.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

constexpr std::size_t value_size = 1887436;  // a 1.8 MiB KV page

std::size_t files_with(const std::filesystem::path& dir, const std::string& suffix) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator{dir})
    n += e.path().extension() == suffix;
  return n;
}

void check_value(node& n, const std::string& key, std::uint64_t seed) {
  const auto got = n.read_values({key});
  REQUIRE_MESSAGE(got[0].status.ok(), key, ": ", to_string(got[0].status));
  CHECK(got[0].value == generated_value(value_size, seed, key));
}

TEST_SUITE("store") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "a lone put is durable and readable before its bucket seals") {
  test::temp_dir dir;
  auto config = test::private_node(dir.path());
  config.read.readers = 1;
  config.storage.seal_after_ms = 60000;  // the seal is a minute away: the answer is not it
  node n{config};
  auto put = n.put({"lone"}, {generated_value(value_size, 1, "lone")});
  REQUIRE(put.wait_for(std::chrono::milliseconds{config.storage.seal_after_ms / 2}) ==
          std::future_status::ready);
  REQUIRE(put.get().at(0).ok());
  CHECK(files_with(dir.path(), ".tmp") == 1);  // still unsealed ...
  CHECK(files_with(dir.path(), ".bucket") == 0);
  auto s = n.store_stats();
  CHECK(s.open_buckets == 1);
  CHECK(s.buckets == 0);
  CHECK(s.commits == 1);
  CHECK(s.keys == 1);
  check_value(n, "lone", 1);  // ... and read back from the .tmp

  // Overwritten in the open bucket: the newer value wins, the older is its garbage.
  REQUIRE(n.put({"lone"}, {generated_value(value_size, 2, "lone")}).get().at(0).ok());
  check_value(n, "lone", 2);
  s = n.store_stats();
  CHECK(s.garbage_bytes == value_size);
  CHECK(s.commits == 2);
  // Removed: gone, yet the open bucket stays (it is still being written).
  CHECK(n.remove({"lone"}) == 1);
  CHECK(n.read_values({"lone"})[0].status.error == key_error::not_found);
  CHECK(n.store_stats().open_buckets == 1);
  CHECK(files_with(dir.path(), ".tmp") == 1);

  REQUIRE(n.put({"after"}, {generated_value(value_size, 3, "after")}).get().at(0).ok());
  n.flush();
  CHECK(files_with(dir.path(), ".tmp") == 0);
  CHECK(files_with(dir.path(), ".bucket") == 1);
  s = n.store_stats();
  CHECK(s.open_buckets == 0);
  CHECK(s.buckets == 1);
  CHECK(s.keys == 1);
  check_value(n, "after", 3);  // now from the sealed file
  CHECK(n.read_values({"lone"})[0].status.error == key_error::not_found);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a key of the open bucket reads through the page cache after its seal") {
  test::temp_dir dir;
  auto config = test::private_node(dir.path());
  config.read.readers = 1;
  config.storage.seal_after_ms = 60000;
  config.fault.enabled = true;
  config.fault.refuse_o_direct_reads = true;  // every bucket's first read reopens it by name
  node n{config};
  REQUIRE(n.put({"k"}, {generated_value(value_size, 4, "k")}).get().at(0).ok());
  n.flush();  // renamed before any read: the reopen must find the sealed name
  CHECK(files_with(dir.path(), ".tmp") == 0);
  check_value(n, "k", 4);
  CHECK(n.store_stats().reads_buffered);
  check_arena(n);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
