// `spillway serve` stopped by SIGTERM while a client's batches are in flight: a get held
// by a frozen read in spillway-faultfs, a put held by an open bucket. The graceful stop
// answers both and exits 0, and a restart on the same data dir has every acknowledged
// key; a second SIGTERM or node.stop_timeout_ms forces it, exit 1, named in the log.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "runtime/client.hpp"
#include "tests/eventually.hpp"
#include "tests/faultfs_mount.hpp"
#include "tests/serve_process.hpp"
#include "tests/skip.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t seed = 4;

struct stop_fixture {
  test::faultfs_mount fs;
  test::serve_process serve;
  std::vector<std::string> keys, values;

  // A node on the fault filesystem whose puts wait for the stop (a bucket seals at 100
  // keys, or after an hour) and whose reads wait for the fault's release.
  void start(const std::string& node_keys) {
    serve.data_dir = fs.mountpoint() / "data";
    serve.node_keys = node_keys;
    serve.storage_keys = "seal_after_ms = 3600000\nbucket_keys_limit = 100\n";
    serve.read_keys = "timeout_ms = 600000\n";
    serve.start();
  }

  cluster_section one_node() const {
    cluster_section c;
    c.nodes = {serve.address()};
    c.request_timeout_ms = 600000;
    return c;
  }

  std::vector<std::string> make_values(const std::string& prefix, std::size_t count) {
    std::vector<std::string> made;
    for (std::size_t i = 0; i < count; ++i) {
      keys.push_back(generated_key(prefix, i));
      values.push_back(generated_value(1000 + 97 * i, seed, keys.back()));
      made.push_back(keys.back());
    }
    return made;
  }

  std::vector<std::string> values_of(const std::vector<std::string>& some) const {
    std::vector<std::string> out;
    for (const auto& k : some)
      for (std::size_t j = 0; j < keys.size(); ++j)
        if (keys[j] == k) out.push_back(values[j]);
    return out;
  }

  // `count` keys put and acknowledged: whole buckets, sealed by their key count.
  std::vector<std::string> put_sealed(client& c, std::size_t count) {
    const auto made = make_values("sealed/", count);
    for (const auto& s : c.put(made, values_of(made))) REQUIRE(s.ok());
    return made;
  }

  // A get of `wanted` from a client of its own, held until the faults are cleared.
  std::future<std::vector<read_value>> frozen_get(const std::vector<std::string>& wanted,
                                                   std::uint64_t rule) {
    auto got = std::async(std::launch::async, [this, wanted] {
      client c{one_node()};
      return c.get(wanted);
    });
    REQUIRE(test::eventually([&] { return fs.held(rule) > 0; }));
    return got;
  }

  void check_exact(const std::vector<std::string>& wanted, const std::vector<read_value>& got) {
    const auto want = values_of(wanted);
    REQUIRE(got.size() == wanted.size());
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      REQUIRE_MESSAGE(got[k].status.ok(), wanted[k] << ": " << to_string(got[k].status));
      REQUIRE(got[k].value == want[k]);
    }
  }
};

TEST_SUITE("service") {

TEST_CASE_FIXTURE(stop_fixture,
                  "serve on SIGTERM finishes a get and a put in flight and exits 0 and a restart "
                  "has every acknowledged key") {
  if (!fs.usable()) return test::skip_test(fs.why());
  start("");
  client c{one_node()};
  REQUIRE(c.await_connected(30s) == 1);
  const auto sealed = put_sealed(c, 300);

  const auto rule = fs.add("op=read path=*.bucket fault=freeze");
  auto got = frozen_get(sealed, rule);
  const auto open = make_values("open/", 50);
  auto put = std::async(std::launch::async, [this, &open] {
    client other{one_node()};
    return other.put(open, values_of(open));
  });
  // The writer opens the bucket file as it takes the put: from then on the put waits for
  // the bucket to seal, an hour away unless the stop seals it.
  REQUIRE(test::eventually([&] {
    std::error_code ignored;
    for (const auto& f : std::filesystem::directory_iterator(fs.backing() / "data", ignored))
      if (f.path().extension() == ".tmp") return true;
    return false;
  }));

  serve.process().send_signal(SIGTERM);
  REQUIRE_MESSAGE(serve.process().wait_for_stderr("stopping: 2 requests in flight", 30s),
                  serve.process().err());
  // A request after the stop began is refused at once, while the get still waits.
  const auto late = c.get({sealed[0]});
  CHECK(late[0].status == key_status{key_error::unavailable, 0});
  fs.clear();
  check_exact(sealed, got.get());
  CHECK(put.get() == std::vector<key_status>(open.size()));  // sealed by the stop
  CHECK(serve.process().finish() == 0);
  CHECK(serve.process().err().find("forced") == std::string::npos);

  serve.start();  // the same data dir: every acknowledged key is there
  client after{one_node()};
  REQUIRE(after.await_connected(30s) == 1);
  check_exact(keys, after.get(keys));
}

TEST_CASE_FIXTURE(stop_fixture,
                  "serve forces its stop on a second SIGTERM or at node.stop_timeout_ms and exits 1") {
  if (!fs.usable()) return test::skip_test(fs.why());
  struct variant {
    const char* name;
    bool second_signal;
    const char* reason;
  };
  for (const auto& v :
       {variant{"second SIGTERM", true, "forced stop: SIGTERM while stopping"},
        variant{"timeout", false, "forced stop: node.stop_timeout_ms = 300 passed"}})
    SUBCASE(v.name) {
      start(v.second_signal ? "" : "stop_timeout_ms = 300\n");
      client c{one_node()};
      REQUIRE(c.await_connected(30s) == 1);
      const auto sealed = put_sealed(c, 100);
      const auto rule = fs.add("op=read path=*.bucket fault=freeze");
      auto got = frozen_get(sealed, rule);
      serve.process().send_signal(SIGTERM);
      REQUIRE_MESSAGE(serve.process().wait_for_stderr("stopping: 1 requests in flight", 30s),
                      serve.process().err());
      if (v.second_signal) serve.process().send_signal(SIGTERM);
      CHECK(serve.process().finish() == 1);
      CHECK_MESSAGE(serve.process().err().find(v.reason) != std::string::npos,
                    serve.process().err());
      // The get in flight fails as the node goes; it does not hang.
      for (const auto& r : got.get()) CHECK(r.status == key_status{key_error::unavailable, 0});

      fs.clear();
      serve.node_keys = "";
      serve.start();  // what was acknowledged survives a forced stop too
      client after{one_node()};
      REQUIRE(after.await_connected(30s) == 1);
      check_exact(sealed, after.get(sealed));
      const int code = serve.stop(SIGTERM);
      CHECK_MESSAGE(code == 0, serve.process().err());
    }
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
