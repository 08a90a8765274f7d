// The read path with real rings, real files and real reader threads: batches across
// many buckets, faults injected on purpose, and the arena's books after each.
#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "tools/generated_value.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/node.hpp"
#include "tests/eventually.hpp"
#include "tests/log_capture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

node_config read_config(const std::filesystem::path& dir) {
  auto config = test::private_node(dir);
  config.storage.bucket_keys_limit = 7;  // many buckets
  config.read.readers = 2;
  return config;
}

// Keys with sizes from 4 KiB to 8 MiB, written and flushed; each write adds to them.
struct dataset {
  std::vector<std::string> keys;
  std::vector<std::size_t> sizes;

  void write(node& n, std::size_t count, const std::string& prefix) {
    std::vector<std::string> written, values;
    for (std::size_t i = 0; i < count; ++i) {
      written.push_back(generated_key(prefix, i));
      sizes.push_back(std::size_t{4096} << (i % 12));  // 4 KiB ... 8 MiB
      values.push_back(generated_value(sizes.back(), 3, written.back()));
    }
    auto acked = n.put(written, std::move(values));
    n.flush();
    for (const auto& s : acked.get()) REQUIRE(s.ok());
    keys.insert(keys.end(), written.begin(), written.end());
  }
};

// The values of `keys` read by get_batch, copied out and the batch released.
std::vector<read_value> read_batch(node& n, const std::vector<std::string>& keys) {
  const auto got = n.get_batch(keys);
  std::vector<read_value> values;
  for (const auto& v : got.values())
    values.push_back({v.status, {reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()}});
  return values;
}

// Every key of `d` present in `got` (read for `keys`) holds exactly its bytes; every
// other key is not_found.
void check_values(const dataset& d, const std::vector<std::string>& keys,
                  const std::vector<read_value>& got) {
  REQUIRE(got.size() == keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const auto at = std::find(d.keys.begin(), d.keys.end(), keys[k]);
    if (at == d.keys.end()) {
      CHECK_MESSAGE(got[k].status.error == key_error::not_found, keys[k]);
      continue;
    }
    REQUIRE_MESSAGE(got[k].status.ok(), keys[k], ": ", to_string(got[k].status));
    CHECK_MESSAGE(got[k].value == generated_value(d.sizes[at - d.keys.begin()], 3, keys[k]),
                  keys[k]);
  }
}

void check_batch(node& n, const dataset& d, const std::vector<std::string>& keys) {
  check_values(d, keys, read_batch(n, keys));
}

// A figure summed over the node's readers.
std::uint64_t readers_total(node& n, std::uint64_t reader_stats::*figure) {
  std::uint64_t total = 0;
  for (const auto& r : n.stats().readers) total += r.*figure;
  return total;
}

// The one sealed bucket file in `dir`.
std::filesystem::path only_bucket(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".bucket") found.push_back(entry.path());
  REQUIRE(found.size() == 1);
  return found[0];
}

// A bucket file moved away while its bucket holds it open with O_DIRECT: the bucket can
// no longer open it buffered, as when it was deleted behind the store's back.
std::filesystem::path move_away(const std::filesystem::path& file) {
  auto away = file;
  away += ".away";
  std::filesystem::rename(file, away);
  return away;
}

// `engine` reading in `mode`, every O_DIRECT read refused as a filesystem would.
node_config refusing_config(const std::filesystem::path& dir, const std::string& engine,
                            const std::string& mode) {
  auto config = read_config(dir);
  config.read.engine = engine;
  config.read.mode = mode;
  config.fault.enabled = true;
  config.fault.refuse_o_direct_reads = true;
  return config;
}

std::vector<std::string> mixed_keys(const dataset& d) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < d.keys.size(); i += 2) {
    keys.push_back(d.keys[i]);
    keys.push_back("absent-" + std::to_string(i));
  }
  return keys;
}

TEST_SUITE("read") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "batches over many buckets return every byte and name the missing keys") {
  test::temp_dir dir;
  node n{read_config(dir.path())};
  dataset d;
  d.write(n, 40, "many-");
  CHECK(n.store_stats().buckets >= 6);
  check_batch(n, d, d.keys);
  check_batch(n, d, mixed_keys(d));
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "concurrent batches each get their own bytes") {
  test::temp_dir dir;
  node n{read_config(dir.path())};
  dataset d;
  d.write(n, 24, "concurrent-");
  // The clients only read: an assertion that failed on their threads would terminate
  // the run, so the results come back here to be checked.
  std::vector<std::vector<std::string>> keys;
  for (int c = 0; c < 4; ++c) keys.emplace_back(d.keys.begin() + c, d.keys.begin() + c + 12);
  std::vector<std::future<std::vector<read_value>>> clients;
  for (const auto& k : keys)
    clients.push_back(std::async(std::launch::async, [&n, &k] { return read_batch(n, k); }));
  for (std::size_t c = 0; c < keys.size(); ++c) check_values(d, keys[c], clients[c].get());
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a batch bigger than the free arena waits for space and completes") {
  test::temp_dir dir;
  auto config = read_config(dir.path());
  // One batch's extents fit, two do not (a v2 value's extent is the value alone).
  config.read.arena_size = 6 << 20;
  config.read.arena_chunk = 6 << 20;
  node n{config};
  dataset d;
  d.write(n, 10, "wait-");  // 4 KiB ... 2 MiB: just under 4 MiB of values
  for (const std::string mode : {"window", "group"}) {
    CAPTURE(mode);
    auto held = n.get_batch(d.keys);
    // Let go of the held views once the second batch waits for their room.
    bool waited = false;
    std::thread releaser{[&] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!(waited = n.read_stats().waiting > 0) &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      held.release();
    }};
    const auto got = n.get_batch(d.keys, mode);
    releaser.join();
    CHECK(waited);
    for (const auto& v : got.values()) CHECK(v.status.ok());
  }
  CHECK(n.read_stats().expired == 0);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a batch bigger than the whole arena is served in waves to the copying calls") {
  test::temp_dir dir;
  auto config = read_config(dir.path());
  config.read.arena_size = 4 << 20;
  config.read.arena_chunk = 2 << 20;
  node n{config};
  std::vector<std::string> keys, values;
  for (int i = 0; i < 12; ++i) {  // 12 MiB of values through a 4 MiB arena
    keys.push_back(generated_key("wave-", i));
    values.push_back(generated_value(1 << 20, 4, keys.back()));
  }
  auto acked = n.put(keys, values);
  n.flush();
  for (const auto& s : acked.get()) REQUIRE(s.ok());
  const auto got = n.read_values(keys);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(got[k].status.ok(), keys[k], ": ", to_string(got[k].status));
    CHECK(got[k].value == values[k]);
  }
  std::vector<std::string> buffers(keys.size(), std::string(1 << 20, '\0'));
  std::vector<std::span<std::byte>> spans;
  for (auto& b : buffers) spans.push_back({reinterpret_cast<std::byte*>(b.data()), b.size()});
  std::vector<std::size_t> sizes;
  for (const auto& s : n.get_batch_into(keys, spans, sizes)) CHECK(s.ok());
  CHECK(buffers == values);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "reads go through registered buffers once the registrar's turn came") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  test::temp_dir dir;
  node n{read_config(dir.path())};
  dataset d;
  d.write(n, 8, "fixed-");
  auto registered = [&] {
    for (const auto& r : n.stats().readers)
      if (r.registered_buffers != 2) return false;
    return true;
  };
  REQUIRE(test::eventually(registered));
  const auto before = readers_total(n, &reader_stats::reads_fixed);
  check_batch(n, d, d.keys);
  CHECK(readers_total(n, &reader_stats::reads_fixed) - before == d.keys.size());
  check_arena(n);
}

// Every ring holds the caller's memory once register_memory's turns came, and none holds
// it once unregister_memory returned: no read_fixed can land in it after that.
TEST_CASE_FIXTURE(test::node_leaks, "caller memory is in every ring's table until unregistered") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  test::temp_dir dir;
  node n{read_config(dir.path())};
  auto every_reader_holds = [&](std::uint64_t buffers) {
    return [&n, buffers] {
      for (const auto& r : n.stats().readers)
        if (r.registered_buffers != buffers) return false;
      return true;
    };
  };
  REQUIRE(test::eventually(every_reader_holds(2)));  // the arena's two chunks
  if (n.stats().readers[0].registration_errno != 0)
    return test::skip_test("registering buffers fails here");
  std::vector<std::byte> memory(3 << 20);
  n.register_memory(memory.data(), memory.size());
  CHECK_THROWS_AS(n.register_memory(memory.data() + 4096, 4096), std::invalid_argument);
  REQUIRE(test::eventually(every_reader_holds(3)));
  n.unregister_memory(memory.data());
  for (const auto& r : n.stats().readers) CHECK(r.registered_buffers == 2);
  CHECK_THROWS_AS(n.unregister_memory(memory.data()), std::invalid_argument);
  n.register_memory(memory.data(), memory.size());  // its slot is free again
  REQUIRE(test::eventually(every_reader_holds(3)));
  n.unregister_memory(memory.data());
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a value bigger than an arena chunk is too_large and the rest succeed") {
  test::temp_dir dir;
  auto config = read_config(dir.path());
  config.read.arena_size = 4 << 20;
  config.read.arena_chunk = 2 << 20;
  node n{config};
  auto acked = n.put({"big", "small"}, {std::string(3 << 20, 'b'), "s"});
  n.flush();
  for (const auto& s : acked.get()) REQUIRE(s.ok());
  const auto got = n.read_values({"big", "small"});
  CHECK(got[0].status.error == key_error::too_large);
  CHECK(got[1].value == "s");
  check_arena(n);
}

// With O_DIRECT refused too, a key's EIO still reaches it once its read goes buffered.
TEST_CASE_FIXTURE(test::node_leaks,
                  "injected EIO fails only its keys and short reads succeed on their retry") {
  for (const std::string engine : {"uring", "posix"})
    for (const std::string mode : {"window", "group"})
      for (const bool refuse_o_direct : {false, true})
        SUBCASE((engine + " " + mode + (refuse_o_direct ? " O_DIRECT refused" : "")).c_str()) {
          test::temp_dir dir;
          auto config = read_config(dir.path());
          config.read.engine = engine;
          config.read.mode = mode;
          dataset d;
          {
            node writer{config};
            d.write(writer, 12, "fault-");
          }
          config.fault.enabled = true;
          config.fault.refuse_o_direct_reads = refuse_o_direct;
          config.fault.read_error_keys = {d.keys[1], d.keys[6]};
          config.fault.short_read_keys = {d.keys[2], d.keys[9]};
          node n{config};
          auto got = n.get_batch(d.keys);
          CHECK(readers_total(n, &reader_stats::short_reads) == 2);  // once each, then whole
          CHECK((n.store_stats().o_direct_refusals > 0) == refuse_o_direct);
          for (std::size_t k = 0; k < d.keys.size(); ++k) {
            const auto& v = got.values()[k];
            if (k == 1 || k == 6) {
              CHECK(v.status.error == key_error::io_error);
              CHECK(v.status.sys_errno == EIO);
            } else {
              CHECK_MESSAGE(v.status.ok(), d.keys[k], ": ", to_string(v.status));
            }
          }
          got.release();
          auto clean = d.keys;
          clean.erase(clean.begin() + 6);
          clean.erase(clean.begin() + 1);
          check_batch(n, d, clean);
          check_arena(n);
        }
}

// Registration happens on a ring only: without io_uring there is none to fail.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a failing registration leaves the readers on plain reads with none failed"
                  * doctest::test_suite("fault")) {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  test::temp_dir dir;
  test::log_capture log{"warn"};
  auto config = read_config(dir.path());
  config.node.log_level = "warn";
  config.fault.enabled = true;
  config.fault.fail_registration = true;
  {
    node n{config};
    auto failed = [&] {
      for (const auto& r : n.stats().readers)
        if (r.registration_errno == 0) return false;
      return true;
    };
    REQUIRE(test::eventually(failed));
    dataset d;
    d.write(n, 12, "noreg-");
    check_batch(n, d, d.keys);
    CHECK(readers_total(n, &reader_stats::reads_fixed) == 0);
    for (const auto& r : n.stats().readers) CHECK(r.registration_errno == ENOMEM);
    check_arena(n);
  }
  // Each reader had a turn per arena chunk, and said so once.
  CHECK(log.count("registering the arena failed") == config.read.readers);
}

TEST_CASE_FIXTURE(test::node_leaks, "ring submit failures reset the ring and lose no read"
                  * doctest::test_suite("fault")) {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  test::temp_dir dir;
  auto config = read_config(dir.path());
  config.fault.enabled = true;
  config.fault.ring_submit_failure_rate = 0.3;
  node n{config};
  dataset d;
  d.write(n, 20, "reset-");
  for (int round = 0; round < 3; ++round) check_batch(n, d, d.keys);
  CHECK(readers_total(n, &reader_stats::ring_resets) > 0);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a ring that cannot be set up again after a reset leaves its reader on pread"
                  * doctest::test_suite("fault")) {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  test::temp_dir dir;
  auto config = read_config(dir.path());
  config.fault.enabled = true;
  config.fault.ring_submit_failure_rate = 0.3;
  config.fault.fail_ring_reopen = true;
  node n{config};
  dataset d;
  d.write(n, 20, "reopen-");
  for (int round = 0; round < 3; ++round) check_batch(n, d, d.keys);
  std::size_t on_pread = 0;
  for (const auto& r : n.stats().readers) {
    CAPTURE(r.index);
    CHECK(r.ring_resets <= 1);  // after the failed one, no ring is left to reset
    CHECK(r.engine == (r.ring_resets == 1 ? "posix" : "io_uring"));
    CHECK(r.ring_errno == (r.ring_resets == 1 ? ENOMEM : 0));
    on_pread += r.engine == "posix";
  }
  CHECK(on_pread > 0);
  CHECK(n.stats().reader_restarts == 0);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "the posix engine and group mode read the same bytes") {
  for (const char* engine : {"posix", "uring"})
    for (const char* mode : {"window", "group"}) {
      CAPTURE(engine);
      CAPTURE(mode);
      test::temp_dir dir;
      auto config = read_config(dir.path());
      config.read.engine = engine;
      config.read.mode = mode;
      config.read.queue_depth = 3;
      node n{config};
      dataset d;
      d.write(n, 16, "modes-");
      check_batch(n, d, mixed_keys(d));
      check_arena(n);
    }
}

TEST_CASE_FIXTURE(test::node_leaks, "refused O_DIRECT falls back to buffered reads") {
  test::temp_dir dir;
  auto config = read_config(dir.path());
  config.fault.enabled = true;
  config.fault.refuse_o_direct = true;
  node n{config};
  dataset d;
  d.write(n, 10, "buffered-");
  check_batch(n, d, d.keys);
  check_arena(n);
  CHECK(n.store_stats().reads_buffered);
  CHECK(n.store_stats().o_direct_refusals > 0);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "O_DIRECT refused at the first read moves every bucket to buffered reads") {
  for (const std::string engine : {"uring", "posix"})
    for (const std::string mode : {"window", "group"})
      SUBCASE((engine + " " + mode).c_str()) {
        test::temp_dir dir;
        node n{refusing_config(dir.path(), engine, mode)};
        dataset d;
        d.write(n, 16, "refused-");
        CHECK_FALSE(n.store_stats().reads_buffered);
        CHECK(n.store_stats().o_direct_refusals == 0);
        check_batch(n, d, mixed_keys(d));
        CHECK(n.store_stats().reads_buffered);
        CHECK(n.store_stats().o_direct_refusals > 0);
        check_batch(n, d, d.keys);
        check_arena(n);
      }
}

// The first four keys' bucket keeps its O_DIRECT descriptor, which the fault refuses,
// and has no file to open buffered: those keys have nothing left to read through.
TEST_CASE_FIXTURE(test::node_leaks,
                  "keys whose bucket cannot reopen its file buffered fail with the open's errno") {
  for (const std::string engine : {"uring", "posix"})
    for (const std::string mode : {"window", "group"})
      SUBCASE((engine + " " + mode).c_str()) {
        test::temp_dir dir;
        node n{refusing_config(dir.path(), engine, mode)};
        dataset d;
        d.write(n, 4, "lost-");
        const auto file = only_bucket(dir.path());
        d.write(n, 6, "kept-");
        const auto away = move_away(file);
        const key_status no_file{key_error::io_error, ENOENT};
        auto got = n.get_batch(d.keys);
        for (std::size_t k = 0; k < d.keys.size(); ++k) {
          const auto& v = got.values()[k];
          if (k < 4) {
            CHECK_MESSAGE(v.status == no_file, d.keys[k], ": ", to_string(v.status));
            CHECK(v.bytes.empty());
          } else {
            REQUIRE_MESSAGE(v.status.ok(), d.keys[k], ": ", to_string(v.status));
            CHECK(std::string_view(reinterpret_cast<const char*>(v.bytes.data()),
                                   v.bytes.size()) == generated_value(d.sizes[k], 3, d.keys[k]));
          }
        }
        got.release();
        check_arena(n);
        std::filesystem::rename(away, file);
        check_batch(n, d, d.keys);
        check_arena(n);
      }
}

// The two refused keys fill the arena: after they give up, only the wave that hands
// their extents back lets the rest of the batch in.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a copying batch goes on after a bucket gave up the keys that filled the arena") {
  for (const std::string mode : {"window", "group"})
    SUBCASE(mode.c_str()) {
      test::temp_dir dir;
      auto config = read_config(dir.path());
      config.read.arena_size = 4 << 20;
      config.read.arena_chunk = 2 << 20;  // one 1 MiB record a chunk: two reads at a time
      config.read.mode = mode;
      config.fault.enabled = true;
      config.fault.refuse_o_direct_reads = true;
      node n{config};
      std::vector<std::string> keys, values;
      auto write = [&](const std::string& prefix, int count) {
        std::vector<std::string> k, v;
        for (int i = 0; i < count; ++i) {
          k.push_back(generated_key(prefix, i));
          v.push_back(generated_value(1 << 20, 4, k.back()));
        }
        auto acked = n.put(k, v);
        n.flush();
        for (const auto& s : acked.get()) REQUIRE(s.ok());
        keys.insert(keys.end(), k.begin(), k.end());
        values.insert(values.end(), v.begin(), v.end());
      };
      write("lost-", 2);
      const auto file = only_bucket(dir.path());
      write("kept-", 6);
      move_away(file);
      const key_status no_file{key_error::io_error, ENOENT};
      const auto got = n.read_values(keys);  // the lost keys first: the first grant is theirs
      for (std::size_t k = 0; k < keys.size(); ++k) {
        if (k < 2) {
          CHECK_MESSAGE(got[k].status == no_file, keys[k], ": ", to_string(got[k].status));
          CHECK(got[k].value.empty());
        } else {
          REQUIRE_MESSAGE(got[k].status.ok(), keys[k], ": ", to_string(got[k].status));
          CHECK(got[k].value == values[k]);
        }
      }
      check_arena(n);
    }
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "fault rates act on both engines: every read flipped or failed, no value handed out") {
  for (const std::string engine : {"uring", "posix"})
    for (const bool flip : {true, false})
      SUBCASE((engine + (flip ? " corrupt_rate" : " read_error_rate")).c_str()) {
        test::temp_dir dir;
        auto config = read_config(dir.path());
        config.read.engine = engine;
        config.fault.enabled = true;
        (flip ? config.fault.corrupt_rate : config.fault.read_error_rate) = 1;
        node n{config};
        dataset d;
        d.write(n, 8, "flipped-");
        auto got = n.get_batch(d.keys);
        for (std::size_t k = 0; k < d.keys.size(); ++k) {
          const auto& status = got.values()[k].status;
          CHECK_MESSAGE(status.error == (flip ? key_error::corrupt : key_error::io_error),
                        d.keys[k]);
          CHECK(status.sys_errno == (flip ? 0 : EIO));
          CHECK(got.values()[k].bytes.empty());
        }
        got.release();
        check_arena(n);
      }
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
