// A disk that stops answering reads (a freeze in spillway-faultfs) against
// read.timeout_ms: the batch answers by its deadline and the node serves after.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tests/eventually.hpp"
#include "tests/fault_fs_fixture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

using test::check_read;
using test::config_on;
using test::dataset;
using test::spot_of;

TEST_SUITE("fault") {

// The victim's read is held in the fault fs: frozen until released, or delayed well past
// the deadline. A copying batch answers by its deadline, that key as timeout and the rest
// exact. A batch of views cannot hand out the lease the late read lands in: the call
// gives up at its own bound (twice read.timeout_ms), each key a named error. Either way
// the late read's lease comes back and the node serves a clean batch after.
TEST_CASE_FIXTURE(test::node_leaks,
                  "faultfs: a frozen or slow read trips read.timeout_ms and the node serves after") {
  test::faultfs_mount fs;
  if (!fs.usable()) return test::skip_test(fs.why());
  struct variant {
    const char* name;
    bool views;
    const char* rule;
  };
  for (const auto& v : {variant{"copying frozen", false, "op=read fault=freeze"},
                        variant{"views frozen", true, "op=read fault=freeze"},
                        variant{"copying slow", false, "op=read fault=delay delay_ms=3000"}})
    SUBCASE(v.name) {
      auto config = config_on(fs);
      config.read.timeout_ms = 500;
      node n{config};
      dataset d;
      d.write(n, 12, "late-");
      const auto victim = d.keys[6];
      const auto rule = fs.add(spot_of(fs, victim).rule(v.rule));
      auto pending = std::async(std::launch::async, [&] {
        if (!v.views) return n.read_values(d.keys);
        std::vector<read_value> got;
        const auto batch = n.get_batch(d.keys);
        for (const auto& b : batch.values())
          got.push_back({b.status, {reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size()}});
        return got;
      });
      REQUIRE(test::eventually([&] { return fs.injected(rule) == 1; }));
      // Twenty deadlines: a bound for a batch that never answers, not a synchronisation.
      const bool answered =
        pending.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
      CHECK_MESSAGE(answered, "no answer by read.timeout_ms with a read late");
      fs.clear();  // lets a frozen read go
      const auto got = pending.get();
      for (std::size_t k = 0; k < d.keys.size(); ++k) {
        const auto& status = got[k].status;
        if (d.keys[k] == victim || (v.views && !status.ok())) {
          CHECK_MESSAGE((status.error == key_error::timeout ||
                         (v.views && status.error == key_error::unavailable)),
                        d.keys[k], ": ", to_string(status));
          CHECK(got[k].value.empty());
          continue;
        }
        REQUIRE_MESSAGE(status.ok(), d.keys[k], ": ", to_string(status));
        CHECK(got[k].value == test::value_of(d.keys[k]));
      }
      check_read(n, d.keys);
      // The late read's lease went with a reply its caller had stopped waiting for: the
      // arena takes it back once it sees that caller gone.
      CHECK(test::eventually([&] { return n.read_stats().leases == 0; }));
      check_arena(n);
    }
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway
