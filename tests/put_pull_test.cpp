// client::put_from against real `spillway serve` processes: values over a message's
// inline_value_max lie in memory this process registered, and each owner pulls them
// through its transfer engine into its arena and puts them from there; get_into, the
// other direction, brings them back to be compared byte for byte.
#include <doctest/doctest.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "messages/service.hpp"
#include "runtime/client.hpp"
#include "tests/caller_memory.hpp"
#include "tests/cluster_fixture.hpp"
#include "tests/eventually.hpp"
#include "tests/faultfs_mount.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t MiB = 1 << 20;

struct pull_fixture : test::cluster_fixture {
  std::optional<client> user;
  std::optional<test::caller_memory> source;  // the values, registered: put_from's
  std::optional<test::caller_memory> back;    // get_into's targets, registered

  // `user` connected to the nodes of `cluster`, the values in registered memory.
  client& ready(const cluster_section& cluster) {
    user.emplace(cluster);
    REQUIRE(user->await_connected(30s) == cluster.nodes.size());
    source.emplace(value_sizes(), 0, 0);
    for (std::size_t k = 0; k < values.size(); ++k)
      std::memcpy(source->buffers()[k].data(), values[k].data(), values[k].size());
    user->register_memory(source->base(), source->size());
    back.emplace(value_sizes(), 0, 0);
    user->register_memory(back->base(), back->size());
    return *user;
  }

  std::vector<std::span<const std::byte>> spans(const std::vector<std::size_t>& which) const {
    std::vector<std::span<const std::byte>> out;
    for (auto k : which) out.emplace_back(source->buffers()[k]);
    return out;
  }

  std::vector<std::string> keys_of(const std::vector<std::size_t>& which) const {
    std::vector<std::string> out;
    for (auto k : which) out.push_back(keys[k]);
    return out;
  }

  // put_from of the keys `which`, one status each.
  std::vector<key_status> put(const std::vector<std::size_t>& which) {
    return user->put_from(keys_of(which), spans(which));
  }

  // get_into of the keys `which`: each ok and exact in `back`.
  void check_back(const std::vector<std::size_t>& which) {
    std::vector<std::span<std::byte>> into;
    for (auto k : which) into.push_back(back->buffers()[k]);
    std::vector<std::size_t> got_sizes;
    const auto got = user->get_into(keys_of(which), into, got_sizes);
    for (std::size_t j = 0; j < which.size(); ++j) {
      const auto k = which[j];
      REQUIRE_MESSAGE(got[j].ok(), keys[k] << ": " << to_string(got[j]));
      CHECK(got_sizes[j] == values[k].size());
      CHECK_MESSAGE(back->holds(k, values[k]), keys[k] << ": not its exact bytes");
    }
  }
};

std::vector<std::size_t> all(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = k;
  return out;
}

TEST_SUITE("cluster") {

TEST_CASE_FIXTURE(pull_fixture,
                  "put_from pulls values of 5 MiB and 16 MiB mixed with inline ones in one batch "
                  "and get_into reads every one back exact and no extent stays leased") {
  // Around the threshold too: 4 MiB travels inline, one byte more is pulled.
  make_values(14, {1, 70000, inline_value_max, inline_value_max + 1, 5 * MiB, 16 * MiB, 4096});
  auto& c = ready(start(1));
  std::vector<std::size_t> owned(3);
  for (const auto& k : keys) ++owned[c.placed().owner(k)];
  for (auto n : owned) REQUIRE(n > 0);  // every node pulls

  const auto put = this->put(all(keys.size()));
  for (std::size_t k = 0; k < keys.size(); ++k)
    REQUIRE_MESSAGE(put[k].ok(), keys[k] << ": " << to_string(put[k]));
  // Released before the reply was sent, so before the stats are asked: no waiting.
  CHECK(arenas_clean(c));
  check_back(all(keys.size()));
  std::uint64_t in_place = 0;  // the pulled values went from the arena to the disk as they were
  for (const auto& r : c.stats()) in_place += r.report.io.written_in_place_bytes;
  CHECK(in_place >= 2 * (5 + 16) * MiB);
}

TEST_CASE_FIXTURE(pull_fixture,
                  "put_from fails a value outside registered memory as bad_range and one larger "
                  "than the node's arena as too_large and the rest of the batch succeeds") {
  make_values(3, {5 * MiB, 70000, 72 * MiB});  // the nodes' arenas are 64 MiB
  auto& c = ready(start(1));
  const auto unregistered = generated_value(6 * MiB, test::seed, "outside");
  std::vector<std::string> asked{keys[0], keys[1], keys[2], "outside"};
  auto from = spans(all(3));
  from.push_back(std::as_bytes(std::span{unregistered}));
  const auto got = c.put_from(asked, from);
  CHECK_MESSAGE(got[0].ok(), to_string(got[0]));
  CHECK_MESSAGE(got[1].ok(), to_string(got[1]));
  CHECK(got[2] == key_status{key_error::too_large, 0});
  CHECK(got[3] == key_status{key_error::bad_range, 0});
  check_back({0, 1});
  CHECK(c.exists({keys[2], "outside"}).present == std::vector<std::uint8_t>{0, 0});
  // put carries values inline only: the same large value is too_large there.
  CHECK(c.put({"inline"}, {unregistered}).at(0) == key_status{key_error::too_large, 0});
  CHECK(arenas_clean(c));
}

TEST_CASE_FIXTURE(pull_fixture,
                  "the CLI puts a value over a message's limit on --node by having the node "
                  "pull it") {
  make_values(1, {5 * MiB});
  nodes[0].start();
  cluster_section one;
  one.nodes = {nodes[0].address()};
  one.request_timeout_ms = test::request_timeout_ms;
  test::temp_dir dir;
  const auto file = (dir.path() / "value").string();
  std::ofstream{file, std::ios::binary} << values[0];
  const auto put = test::run_spillway({"put", keys[0], file, "--node", nodes[0].address()});
  REQUIRE_MESSAGE(put.exit_code == 0, put.err);
  ready(one);
  check_back({0});
}

// The victim's writes are frozen in spillway-faultfs: it has pulled its values into its
// arena and its writer holds them when it is killed. It is the client's only node, so
// no other owner takes its keys: they must fail as the connection drops, and what it
// acknowledged before must be there after its restart.
TEST_CASE_FIXTURE(pull_fixture,
                  "a node killed during a pull fails its keys fast as unavailable and restarted "
                  "serves every key it acknowledged" * doctest::test_suite("fault")) {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  victim_on(fs);
  make_values(12, {inline_value_max + 4096, 5 * MiB});
  nodes[1].start();
  cluster_section alone;
  alone.nodes = {nodes[1].address()};
  alone.request_timeout_ms = test::request_timeout_ms;
  ready(alone);
  const std::vector<std::size_t> before{0, 1, 2, 3, 4, 5}, during{6, 7, 8, 9, 10, 11};
  for (const auto& s : put(before)) REQUIRE_MESSAGE(s.ok(), to_string(s));

  const auto rule = fs.add("op=write fault=freeze");
  auto batch = std::async(std::launch::async, [&] { return put(during); });
  REQUIRE(test::eventually([&] { return fs.held(rule) > 0; }));
  const auto killed = std::chrono::steady_clock::now();
  nodes[1].process().send_signal(SIGKILL);
  // An O_DIRECT write that FUSE handed to the mount holds its thread, and so the dying
  // process and its connections, until the mount answers: let it go, the kill pending.
  fs.clear();
  const auto got = batch.get();
  CHECK(std::chrono::steady_clock::now() - killed <
        std::chrono::milliseconds{test::request_timeout_ms / 20});
  nodes[1].kill();  // reaped
  for (std::size_t j = 0; j < during.size(); ++j)
    CHECK_MESSAGE((got[j] == key_status{key_error::unavailable, 0}), to_string(got[j]));

  nodes[1].start(nodes[1].port());
  REQUIRE(user->await_connected(30s) == 1);
  check_back(before);  // acknowledged, so on its disk
  for (const auto& s : put(during)) REQUIRE_MESSAGE(s.ok(), to_string(s));
  check_back(during);
  CHECK(arenas_clean(*user));
  CHECK(nodes[1].stop(SIGTERM) == 0);  // off the mount before it goes
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
