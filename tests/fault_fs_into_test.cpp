// Filesystem faults on reads in place (get_batch_into into the caller's aligned memory),
// injected by spillway-faultfs as for arena reads (fault_fs_read_test.cpp): O_DIRECT
// refused at the first read sends it again buffered, still into the caller's buffer; EIO
// on one key's value fails that key alone. The in-place counter proves the way taken.
#include <doctest/doctest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tests/caller_memory.hpp"
#include "tests/fault_fs_fixture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

using test::config_on;
using test::dataset;
using test::fault_value_size;

// Reads `keys` into aligned caller memory: every key but `failed` lands exactly, in
// place; `failed` has status `want`.
void check_read_into(node& n, const std::vector<std::string>& keys,
                     const std::string& failed = "", key_status want = {}) {
  test::caller_memory memory{std::vector<std::size_t>(keys.size(), fault_value_size), 4096, 0};
  const auto before = n.io().read_in_place_bytes;
  std::vector<std::size_t> sizes;
  const auto statuses = n.get_batch_into(keys, memory.buffers(), sizes);
  std::uint64_t landed = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] == failed) {
      CHECK_MESSAGE(statuses[k] == want, keys[k], ": ", to_string(statuses[k]));
      continue;
    }
    REQUIRE_MESSAGE(statuses[k].ok(), keys[k], ": ", to_string(statuses[k]));
    CHECK_MESSAGE(memory.holds(k, test::value_of(keys[k])), keys[k]);
    landed += fault_value_size;
  }
  CHECK(n.io().read_in_place_bytes - before == landed);
}

TEST_SUITE("fault") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: O_DIRECT refused at the first read in place: it goes again buffered") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  for (const std::string engine : {"uring", "posix"})
    SUBCASE(engine.c_str()) {
      auto config = config_on(fs);
      config.read.engine = engine;
      node n{config};
      dataset d;
      d.write(n, 12, "into-refused-" + engine + "-");
      const auto rule = fs.add("op=read direct=1 path=*.bucket fault=einval count=1");
      check_read_into(n, d.keys);
      CHECK(fs.injected(rule) == 1);
      CHECK(n.store_stats().reads_buffered);
      test::check_recovered(n, fs, d.keys);
    }
}

TEST_CASE_FIXTURE(test::node_leaks, "faultfs: EIO on a value read in place fails that key alone") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  node n{config_on(fs)};
  dataset d;
  d.write(n, 12, "into-eio-");
  const auto victim = d.keys[5];
  const auto rule = fs.add(test::spot_of(fs, victim).rule("op=read fault=eio count=1"));
  check_read_into(n, d.keys, victim, {key_error::io_error, EIO});
  CHECK(fs.injected(rule) == 1);
  test::check_recovered(n, fs, d.keys);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
