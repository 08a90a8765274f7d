// The batch actor with real parts around it (catalog from real files, arena, registrar,
// an io_uring reader) and one reader that swallows its reads and is then killed.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/arena.hpp"
#include "actors/batch.hpp"
#include "actors/catalog.hpp"
#include "actors/reader.hpp"
#include "actors/registrar.hpp"
#include "runtime/actor_system_setup.hpp"
#include "tools/generated_value.hpp"
#include "runtime/node.hpp"
#include "runtime/storage/recovery.hpp"
#include "tests/node_leaks.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

// Takes reads and never answers; tells `witness` how many it took.
reader_actor::behavior_type black_hole(reader_actor::pointer self, caf::actor witness) {
  return {
    [](stats_atom) { return reader_stats{}; },
    [witness](read_atom, const read_client&, const std::vector<read_item>& items) {
      caf::anon_send(witness, caf::ok_atom_v, items.size());
    },
    [](adopt_atom, const buffer_table&) { return std::int32_t{0}; },
    [self](fence_atom) { return self->make_response_promise<std::uint32_t>(); },  // never
  };
}

// Twelve values written through a node, then the read path's actors over the same
// files, with no node around them: the test chooses the readers.
struct batch_fixture : test::node_leaks {
  test::temp_dir dir;
  node_config config = test::private_node(dir.path());
  std::vector<std::string> keys;
  caf::actor_system_config caf_config;
  std::unique_ptr<caf::actor_system> system;
  std::unique_ptr<caf::scoped_actor> self;
  catalog_actor catalog;
  registrar_actor registrar;
  arena_actor arena;

  batch_fixture() {
    config.read.arena_size = 16 << 20;
    config.read.arena_chunk = 16 << 20;
    {
      node writer{config};
      std::vector<std::string> values;
      for (int i = 0; i < 12; ++i) {
        keys.push_back(generated_key("orphan-", i));
        values.push_back(generated_value(50000, 5, keys.back()));
      }
      auto acked = writer.put(keys, std::move(values));
      writer.flush();
      for (const auto& s : acked.get()) REQUIRE(s.ok());
      check_arena(writer);
    }
    system = std::make_unique<caf::actor_system>(configure_actor_system(caf_config));
    self = std::make_unique<caf::scoped_actor>(*system);
    catalog = spawn_catalog(*system, {dir.path(), 1ull << 40, 0, false, false},
                            recover_data_dir(dir.path(), {}));
    registrar = spawn_registrar(*system, 1);
    arena = spawn_arena(*system, config.read, registrar);
  }

  ~batch_fixture() {
    for (auto a : {caf::actor_cast<caf::actor>(arena), caf::actor_cast<caf::actor>(registrar),
                   caf::actor_cast<caf::actor>(catalog)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  // A reader that swallows the first reads it gets, then is killed; the batch's reply.
  get_reply get_while_hole_dies(std::vector<reader_actor> others) {
    auto hole = system->spawn(black_hole, caf::actor_cast<caf::actor>(*self));
    others.insert(others.begin(), hole);
    auto batch = spawn_batch(*system, {catalog, arena, others, config.read, config.fault, {}, {}, {}});
    auto answer = (*self)->request(batch, std::chrono::seconds(30), caf::get_atom_v, keys);
    std::size_t swallowed = 0;
    (*self)->receive([&](caf::ok_atom, std::size_t n) { swallowed = n; });
    CHECK(swallowed > 0);  // the hole has reads of this batch ...
    caf::anon_send_exit(hole, caf::exit_reason::kill);  // ... and dies with them
    get_reply reply;
    answer.receive([&](get_reply& r) { reply = std::move(r); },
                   [&](caf::error& err) { FAIL("batch: " << to_string(err)); });
    REQUIRE(reply.items.size() == keys.size());
    return reply;
  }
};

TEST_SUITE("batch") {

TEST_CASE_FIXTURE(batch_fixture,
                  "a reader killed mid-batch hands its reads to the others and the batch completes"
                  * doctest::test_suite("fault")) {
  auto real = spawn_reader(*system, 0, config.read, config.fault, registrar);
  const auto reply = get_while_hole_dies({real});
  for (std::size_t k = 0; k < keys.size(); ++k) {
    REQUIRE_MESSAGE(reply.items[k].status.ok(), keys[k], ": ", to_string(reply.items[k].status));
    const std::string_view got{reinterpret_cast<const char*>(reply.items[k].address),
                               reply.items[k].size};
    CHECK(got == generated_value(50000, 5, keys[k]));
  }
  for (auto lease : reply.leases) caf::anon_send(arena, release_atom_v, lease);
  caf::anon_send_exit(real, caf::exit_reason::user_shutdown);
}

// The groups not yet sent have no reader to go to either: each settles at once, where
// before they waited for the batch's deadline.
TEST_CASE_FIXTURE(batch_fixture,
                  "group mode with its only reader killed answers every key unavailable at once") {
  config.read.mode = "group";
  config.read.queue_depth = 2;
  config.read.timeout_ms = 600000;  // the test's own 30 s limit fails first
  const auto reply = get_while_hole_dies({});
  for (std::size_t k = 0; k < keys.size(); ++k)
    CHECK_MESSAGE(reply.items[k].status.error == key_error::unavailable, keys[k]);
  for (auto lease : reply.leases) caf::anon_send(arena, release_atom_v, lease);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
