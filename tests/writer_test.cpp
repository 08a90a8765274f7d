// The writer and the catalog under the deterministic scheduler, on real files: puts
// queued together are committed together (group commit), each answered once its keys
// are durable and published, long before the bucket seals.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <caf/send.hpp>

#include "actors/catalog.hpp"
#include "actors/meter.hpp"
#include "actors/writer.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "tests/det_fixture.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

struct writer_fixture : test::det_fixture {
  test::temp_dir dir;
  catalog_actor catalog = spawn_catalog(system, {dir.path(), 1ull << 40, 0, false, false}, {});
  meter_actor meter = spawn_meter(system);
  writer_actor writer;

  // seal_after_ms 0: sealed only by limits, flush and exit.
  explicit writer_fixture(std::uint64_t seal_after_ms = 0) {
    writer_options options;
    options.dir = dir.path();
    options.seal_after_ms = seal_after_ms;
    writer = spawn_writer(system, options, catalog, meter, false);
    sched.run();
  }

  ~writer_fixture() {
    for (auto a : {caf::actor_cast<caf::actor>(writer), caf::actor_cast<caf::actor>(catalog),
                   caf::actor_cast<caf::actor>(meter)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }

  catalog_stats stats() {
    auto handle = self->request(catalog, caf::infinite, stats_atom_v);
    sched.run();
    catalog_stats s;
    handle.receive([&](catalog_stats& got) { s = got; },
                   [&](caf::error& err) { FAIL("stats: " << to_string(err)); });
    return s;
  }

  put_reply put(const std::string& key) {
    auto handle = self->request(writer, caf::infinite, caf::put_atom_v,
                                std::vector<std::string>{key},
                                std::vector<std::string>{std::string(5000, 'v')});
    sched.run();
    put_reply reply;
    handle.receive([&](put_reply& r) { reply = std::move(r); },
                   [](caf::error& err) { FAIL("put: " << to_string(err)); });
    return reply;
  }

  bool file_exists(const std::string& suffix) const {
    for (const auto& e : std::filesystem::directory_iterator{dir.path()})
      if (e.path().extension() == suffix) return true;
    return false;
  }
};

TEST_SUITE("writer") {

TEST_CASE_FIXTURE(writer_fixture, "puts queued behind each other are committed by one fdatasync") {
  constexpr int puts = 8;
  using put_handle = decltype(self->request(writer, caf::infinite, caf::put_atom_v,
                                            std::vector<std::string>{},
                                            std::vector<std::string>{}));
  std::vector<put_handle> handles;
  // All eight are in the writer's mailbox before it runs: the commit the first one
  // queues comes after the other seven.
  for (int i = 0; i < puts; ++i)
    handles.push_back(self->request(writer, caf::infinite, caf::put_atom_v,
                                    std::vector<std::string>{"key-" + std::to_string(i)},
                                    std::vector<std::string>{std::string(5000, char('a' + i))}));
  sched.run();
  for (auto& h : handles)
    h.receive([](put_reply& r) { CHECK(r.keys.at(0).ok()); },
              [](caf::error& err) { FAIL("put: " << to_string(err)); });
  auto s = stats();
  CHECK(s.commits == 1);  // without group commit: none (answered at the seal) or eight
  CHECK(s.keys == puts);
  CHECK(s.open_buckets == 1);
  CHECK(s.buckets == 0);
  CHECK(file_exists(".tmp"));
  CHECK_FALSE(file_exists(".bucket"));

  // One more put later is a group of its own, in the same open bucket.
  CHECK(put("key-late").keys.at(0).ok());
  s = stats();
  CHECK(s.commits == 2);
  CHECK(s.open_buckets == 1);
  CHECK(s.keys == puts + 1);

  // The seal moves the committed keys to the sealed file: none is lost or counted twice.
  auto flushed = self->request(writer, caf::infinite, caf::flush_atom_v);
  sched.run();
  flushed.receive([](caf::ok_atom) {}, [](caf::error& err) { FAIL("flush: " << to_string(err)); });
  s = stats();
  CHECK(s.keys == puts + 1);
  CHECK(s.open_buckets == 0);
  CHECK(s.buckets == 1);
  CHECK(s.garbage_bytes == 0);
  CHECK_FALSE(file_exists(".tmp"));
  CHECK(file_exists(".bucket"));
}

struct sealed_after_50ms : writer_fixture {
  sealed_after_50ms() : writer_fixture(50) {}
};

TEST_CASE_FIXTURE(sealed_after_50ms, "seal_after_ms seals a partly full bucket without a flush") {
  CHECK(put("lonely").keys.at(0).ok());  // answered at its commit ...
  CHECK(stats().open_buckets == 1);
  sched.advance_time(std::chrono::milliseconds{50});  // ... sealed by the writer's own timer
  sched.run();
  const auto s = stats();
  CHECK(s.open_buckets == 0);
  CHECK(s.buckets == 1);
  CHECK(s.keys == 1);
  CHECK(file_exists(".bucket"));
  CHECK_FALSE(file_exists(".tmp"));
}

TEST_CASE_FIXTURE(test::det_fixture, "eviction never takes the open bucket") {
  test::temp_dir dir;
  constexpr std::uint64_t mib = 1 << 20;
  // Room for two buckets of 10 MiB beside the 1 MiB kept for the one being written.
  auto catalog = spawn_catalog(system, {dir.path(), 21 * mib, 1 * mib, false, false}, {});
  auto send = [&](auto atom, std::uint64_t sequence, const std::string& suffix) {
    const auto id = make_bucket_id(1, sequence);
    const auto name = suffix == ".tmp" ? bucket_tmp_name(id) : bucket_file_name(id);
    auto handle = self->request(
      catalog, caf::infinite, atom,
      bucket_records{id, (dir.path() / name).string(), 10 * mib,
                     {{"key-" + std::to_string(sequence), 100, 4096, 0}}});
    sched.run();
    handle.receive([](caf::ok_atom) {}, [](caf::error& err) { FAIL(to_string(err)); });
  };
  send(commit_atom_v, 1, ".tmp");  // the oldest, and still open
  send(caf::publish_atom_v, 2, ".bucket");
  send(caf::publish_atom_v, 3, ".bucket");  // over the quota: one bucket must go
  auto handle = self->request(catalog, caf::infinite, stats_atom_v);
  sched.run();
  handle.receive(
    [](catalog_stats& s) {
      CHECK(s.evicted_buckets == 1);
      CHECK(s.open_buckets == 1);
      CHECK(s.buckets == 1);
    },
    [](caf::error& err) { FAIL(to_string(err)); });
  auto present = self->request(catalog, caf::infinite, exists_atom_v,
                               std::vector<std::string>{"key-1", "key-2", "key-3"});
  sched.run();
  present.receive(
    [](std::vector<std::uint8_t>& p) { CHECK(p == std::vector<std::uint8_t>{1, 0, 1}); },
    [](caf::error& err) { FAIL(to_string(err)); });
  caf::anon_send_exit(catalog, caf::exit_reason::user_shutdown);
  sched.run();
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
