// client::get_into against real `spillway serve` processes: each node reads its keys
// from disk and writes them through its transfer engine into memory this process
// registered, over tcp on 127.0.0.1; nothing of a value travels in a message.
#include <doctest/doctest.h>

#include <csignal>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "runtime/client.hpp"
#include "tests/caller_memory.hpp"
#include "tests/cluster_fixture.hpp"
#include "tests/eventually.hpp"
#include "tests/faultfs_mount.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

using namespace std::chrono_literals;

// Up to 1.8 MiB, the KV block the design is sized for: pieces of several values each.
constexpr std::initializer_list<std::size_t> kv_sizes = {1, 4096, 70000, 300000, 1887436};

struct get_into_fixture : test::cluster_fixture {
  std::optional<client> user;
  std::optional<test::caller_memory> memory;  // a buffer per key, registered with `user`

  // `count` KV-sized values put on the nodes, and `user` ready to get them into `memory`.
  client& loaded(const cluster_section& cluster, std::size_t count) {
    make_values(count, kv_sizes);
    user.emplace(cluster);
    put_all(*user);
    memory.emplace(value_sizes(), 0, 0);
    user->register_memory(memory->base(), memory->size());
    return *user;
  }
};

TEST_SUITE("cluster") {

TEST_CASE_FIXTURE(get_into_fixture,
                  "get_into from three nodes lands exact bytes in request order in registered "
                  "memory and a buffer too small is too_large for its key alone and no extent leaks") {
  make_values(60, kv_sizes);
  client c{start(1)};
  put_all(c);
  std::vector<std::size_t> owned(3);
  for (const auto& k : keys) ++owned[c.placed().owner(k)];
  for (auto n : owned) REQUIRE(n > 0);  // the batch spans every node

  auto asked = keys;
  asked.push_back("never/put");
  auto sizes = value_sizes();
  sizes.push_back(4096);
  constexpr std::size_t short_key = 4;  // 1.8 MiB, given a buffer one byte short
  sizes[short_key] -= 1;
  test::caller_memory memory{sizes, 0, 0};
  c.register_memory(memory.base(), memory.size());

  std::vector<std::size_t> got_sizes;
  const auto got = c.get_into(asked, memory.buffers(), got_sizes);
  REQUIRE(got.size() == asked.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    CHECK(got_sizes[k] == values[k].size());
    if (k == short_key) continue;
    REQUIRE_MESSAGE(got[k].ok(), keys[k] << ": " << to_string(got[k]));
    CHECK_MESSAGE(memory.holds(k, values[k]), keys[k] << ": not its exact bytes");
  }
  CHECK(got[short_key] == key_status{key_error::too_large, 0});
  CHECK(memory.untouched(short_key, 0));
  CHECK(got.back() == key_status{key_error::not_found, 0});
  CHECK(memory.untouched(keys.size(), 0));
  CHECK(test::eventually([&] { return arenas_clean(c); }));
}

TEST_CASE_FIXTURE(get_into_fixture,
                  "get_into refuses a buffer outside registered memory by its key before any "
                  "node is asked") {
  const auto cluster = start(1);
  make_values(3);
  client c{cluster};
  test::caller_memory memory{value_sizes(), 0, 0};
  std::vector<std::size_t> sizes;
  CHECK_THROWS_WITH_AS(c.get_into(keys, memory.buffers(), sizes),
                       doctest::Contains("key \"kv/"), std::invalid_argument);

  // Registered but for its last byte: key 2's buffer runs past the region.
  c.register_memory(memory.base(), memory.size() - 1);
  auto* const end = static_cast<std::byte*>(memory.base()) + memory.size();
  const std::vector<std::span<std::byte>> past_end{{memory.buffers()[2].data(), end}};
  CHECK_THROWS_WITH_AS(c.get_into({keys[2]}, past_end, sizes),
                       doctest::Contains(keys[2].c_str()), std::invalid_argument);

  c.unregister_memory(memory.base());
  CHECK_THROWS_WITH_AS(c.get_into({keys[0]}, {memory.buffers()[0]}, sizes),
                       doctest::Contains(keys[0].c_str()), std::invalid_argument);
  CHECK_THROWS_AS(c.unregister_memory(memory.base()), std::invalid_argument);
}

// The victim's reads are frozen in spillway-faultfs, so its get_into is surely in flight
// when it dies: its keys must fail as the connection drops, not at the timeout.
TEST_CASE_FIXTURE(get_into_fixture,
                  "a node killed during a get_into fails its keys fast as unavailable and the "
                  "others land exact") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  victim_on(fs);
  auto& c = loaded(start(1), 60);

  const auto rule = fs.add("op=read fault=freeze");
  std::vector<std::size_t> sizes;
  auto batch =
    std::async(std::launch::async, [&] { return c.get_into(keys, memory->buffers(), sizes); });
  REQUIRE(test::eventually([&] { return fs.held(rule) > 0; }));
  const auto killed = std::chrono::steady_clock::now();
  nodes[1].kill();
  const auto got = batch.get();
  const auto took = std::chrono::steady_clock::now() - killed;
  CHECK(took < std::chrono::milliseconds{test::request_timeout_ms / 20});
  std::size_t unavailable = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (c.placed().owner(keys[k]) == 1) {
      CHECK(got[k] == key_status{key_error::unavailable, 0});
      ++unavailable;
      continue;
    }
    REQUIRE_MESSAGE(got[k].ok(), keys[k] << ": " << to_string(got[k]));
    CHECK(memory->holds(k, values[k]));
  }
  CHECK(unavailable > 0);
  fs.clear();
  nodes[1].start(nodes[1].port());
  REQUIRE(c.await_connected(30s) == 3);
  CHECK(test::eventually([&] { return arenas_clean(c); }));
  CHECK(nodes[1].stop(SIGTERM) == 0);  // off the mount before it goes
}

TEST_CASE_FIXTURE(get_into_fixture,
                  "with replicas = 2 get_into finds every key when a node is dead") {
  auto& c = loaded(start(2), 30);
  nodes[0].kill();
  std::vector<std::size_t> sizes;
  const auto got = c.get_into(keys, memory->buffers(), sizes);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(got[k].ok(), keys[k] << ": " << to_string(got[k]));
    CHECK(memory->holds(k, values[k]));
  }
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
