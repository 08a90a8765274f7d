// Leases: who may read the arena's memory, and when it may be lent again. Views held
// in this process come back only when their holder lets go; a holder in another
// process also has a clock, since it can vanish without a word. Real nodes, real reader
// threads, and for the remote holder a second actor system over a real socket.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/arena.hpp"
#include "actors/registrar.hpp"
#include "messages/node.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/remote_system.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t mib = 1 << 20;

// An arena of 8 MiB in one chunk, and `count` keys whose values take 1 MiB each: a read
// of a v2 value is its pages alone, so the arena holds exactly 8 of them.
struct one_mib_records {
  test::temp_dir dir;
  std::vector<std::string> keys;
  std::optional<node> n;

  explicit one_mib_records(std::size_t count, void (*adjust)(node_config&) = nullptr) {
    auto config = test::private_node(dir.path());
    config.read.readers = 2;
    config.read.arena_size = 8 * mib;
    config.read.arena_chunk = 8 * mib;
    if (adjust) adjust(config);
    n.emplace(config);
    std::vector<std::string> values;
    for (std::size_t i = 0; i < count; ++i) {
      keys.push_back(generated_key("lease-", i));
      values.push_back(generated_value(mib, 7, keys.back()));
    }
    auto acked = n->put(keys, values);
    n->flush();
    for (const auto& s : acked.get()) REQUIRE(s.ok());
  }

  std::vector<std::string> slice(std::size_t from, std::size_t count) const {
    return {keys.begin() + from, keys.begin() + from + count};
  }

  // Every value of `got` is ok and exactly what was put under its key.
  static void check_exact(const batch_values& got, const std::vector<std::string>& keys) {
    REQUIRE(got.values().size() == keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const auto& v = got.values()[k];
      REQUIRE_MESSAGE(v.status.ok(), keys[k], ": ", to_string(v.status));
      const std::string_view bytes{reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()};
      CHECK_MESSAGE(bytes == generated_value(mib, 7, keys[k]), keys[k]);
    }
  }

  // Polls the arena until `done(stats)`, for at most 30 s: the arena's state changes
  // on its own thread, and the test only looks.
  template <class Predicate>
  arena_stats wait_for(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto s = n->read_stats();
    while (!done(s) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
      s = n->read_stats();
    }
    return s;
  }
};

TEST_SUITE("lease") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "views held past read.lease_ms stay exact while other batches churn the arena" *
                    doctest::test_suite("fault")) {
  one_mib_records store{8, [](node_config& c) { c.read.lease_ms = 20; }};
  const auto held_keys = store.slice(0, 4);
  const auto held = store.n->get_batch(held_keys);
  store.check_exact(held, held_keys);
  // Ten lease times of batches through the other half of the arena: were the held
  // lease reclaimed, these would land on its memory.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  int churned = 0;
  for (; churned < 20 || std::chrono::steady_clock::now() < until; ++churned)
    store.check_exact(store.n->get_batch(store.slice(4, 4)), store.slice(4, 4));
  store.check_exact(held, held_keys);
  const auto s = store.n->read_stats();
  CHECK(s.expired == 0);
  CHECK(s.leases == 1);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "two batches whose values must be held together never each hold a part") {
  // Before: a grant covered what fitted and the batch asked again for the rest, so
  // two batches could each hold half the arena and wait for the other until
  // read.timeout_ms failed their keys as timeout.
  one_mib_records store{12, [](node_config& c) { c.read.timeout_ms = 2000; }};
  std::optional<batch_values> first_half{store.n->get_batch(store.slice(0, 4))};
  std::optional<batch_values> second_half{store.n->get_batch(store.slice(4, 4))};
  std::vector<std::vector<key_status>> statuses(2);
  std::vector<std::thread> callers;
  for (std::size_t c = 0; c < 2; ++c)
    callers.emplace_back([&, c] {
      const auto got = store.n->get_batch(store.slice(2 + 4 * c, 6));  // 6 of 8 MiB
      for (const auto& v : got.values()) statuses[c].push_back(v.status);
    });
  // CHECK, not REQUIRE: the callers must be released and joined whatever happens.
  auto both_waiting = [](const arena_stats& s) { return s.waiting == 2; };
  CHECK(store.wait_for(both_waiting).waiting == 2);
  first_half.reset();  // 4 MiB free: room for a part of either, all of neither
  CHECK(store.wait_for(both_waiting).waiting == 2);
  second_half.reset();
  for (auto& t : callers) t.join();
  for (std::size_t c = 0; c < 2; ++c)
    for (const auto& s : statuses[c]) CHECK_MESSAGE(s.ok(), "caller ", c, ": ", to_string(s));
  check_arena(*store.n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a view batch bigger than the whole arena fails what cannot fit as too_large at once") {
  one_mib_records store{10, [](node_config& c) { c.read.timeout_ms = 60000; }};
  const auto started = std::chrono::steady_clock::now();
  auto got = store.n->get_batch(store.keys);  // 10 MiB through 8
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
  REQUIRE(got.values().size() == 10);
  for (std::size_t k = 0; k < 10; ++k)
    CHECK_MESSAGE(got.values()[k].status.error == (k < 8 ? key_error::none : key_error::too_large),
                  store.keys[k], ": ", to_string(got.values()[k].status));
  got.release();
  check_arena(*store.n);
}

// What another process reaches of the arena below: its requests relayed, so that the
// arena itself (a detached actor) is never published: CAF 0.17.6 then sometimes kept
// it referenced past the middleman's stop, and the actor system waited for its thread
// for ever. The holder a ready names is the remote one all the same.
arena_actor::behavior_type arena_relay(arena_actor::pointer self, arena_actor arena) {
  return {
    [self, arena](alloc_atom, std::vector<std::uint64_t>& sizes,
                  bool whole) -> caf::result<arena_grant> {
      auto promise = self->make_response_promise<arena_grant>();
      self->request(arena, caf::infinite, alloc_atom_v, std::move(sizes), whole)
        .then([promise](arena_grant& g) mutable { promise.deliver(std::move(g)); },
              [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, arena](ready_atom, std::uint64_t lease, caf::actor& holder) {
      self->send(arena, ready_atom_v, lease, std::move(holder));
    },
    [self, arena](release_atom, std::uint64_t lease) { self->send(arena, release_atom_v, lease); },
    [self, arena](stats_atom) { return self->delegate(arena, stats_atom_v); },
    [](caf::tick_atom) {},
    [](caf::timeout_atom, std::uint64_t) {},
  };
}

// No node publishes its arena's leases any more (the node service answers get_into
// instead), but the arena keeps a clock for a holder in another process all the same:
// an arena of 4 MiB in an actor system of its own, reached from a free port of
// 127.0.0.1, and an actor system of "another process" holding a lease from it.
struct published_arena {
  caf::actor_system_config config;
  std::optional<caf::actor_system> system;
  registrar_actor registrar;
  arena_actor arena;
  arena_actor relay;
  std::uint16_t port = 0;

  explicit published_arena(std::uint64_t lease_ms) {
    configure_actor_system(config);
    system.emplace(config);
    read_section read;
    read.arena_size = 4 * mib;
    read.arena_chunk = 4 * mib;
    read.arena_pages = "plain";
    read.lease_ms = lease_ms;
    registrar = spawn_registrar(*system, 1);
    arena = spawn_arena(*system, read, registrar);
    relay = system->spawn(arena_relay, arena);
    auto published = system->middleman().publish(relay, 0, "127.0.0.1");
    REQUIRE_MESSAGE(published, system->render(published.error()));
    port = *published;
  }
  ~published_arena() {
    caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(arena, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(registrar, caf::exit_reason::user_shutdown);
  }

  arena_stats stats() {
    caf::scoped_actor self{*system};
    arena_stats s;
    self->request(arena, std::chrono::seconds(10), stats_atom_v)
      .receive([&](arena_stats& got) { s = got; },
               [&](caf::error& err) { FAIL("arena stats: " << system->render(err)); });
    return s;
  }

  // Polls until `done(stats)`, for at most 30 s: the arena's state changes on its own
  // thread, and the test only looks.
  template <class Predicate>
  arena_stats wait_for(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto s = stats();
    while (!done(s) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
      s = stats();
    }
    return s;
  }
};

struct remote_holder : test::remote_system<arena_actor> {
  std::optional<caf::scoped_actor> self;

  explicit remote_holder(std::uint16_t port) : remote_system(port) { self.emplace(*system); }

  // Takes 1 MiB and holds it, as a batch's caller holds its views, without ever
  // releasing it.
  void hold() {
    arena_grant grant;
    (*self)->request(remote, std::chrono::seconds(30), alloc_atom_v,
                     std::vector<std::uint64_t>{mib}, true)
      .receive([&](arena_grant& g) { grant = std::move(g); },
               [&](caf::error& err) { FAIL("remote alloc: " << system->render(err)); });
    REQUIRE(grant.extents.size() == 1);
    (*self)->send(remote, ready_atom_v, grant.lease, caf::actor_cast<caf::actor>(*self));
  }
};

TEST_CASE("a lease held from another process expires after read.lease_ms" *
          doctest::test_suite("fault")) {
  published_arena owner{20};
  remote_holder holder{owner.port};
  holder.hold();
  const auto s = owner.wait_for([](const arena_stats& s) { return s.expired >= 1; });
  CHECK(s.leases == 0);
  CHECK(s.expired >= 1);
  CHECK(s.abandoned == 0);  // the holder is still there: the clock took it back
}

TEST_CASE("a holder in another process that goes away gives its leases back") {
  published_arena owner{5000};
  std::optional<remote_holder> holder{owner.port};
  holder->hold();
  CHECK(owner.wait_for([](const arena_stats& s) { return s.leases >= 1; }).leases >= 1);
  holder.reset();  // its actor system goes, and with it the connection
  const auto s = owner.wait_for([](const arena_stats& s) { return s.abandoned >= 1; });
  CHECK(s.leases == 0);
  CHECK(s.abandoned >= 1);
  CHECK(s.expired == 0);  // lease_ms is 5 s: the monitor, not the clock, took it back
}

// A reader that reads nothing and holds every fence until it is told `ok`: it stands
// for a reader whose reads into a lease are still in flight.
using held_fence_reader = reader_actor::extend<caf::reacts_to<caf::ok_atom>>;

struct held_fence_state {
  std::shared_ptr<std::promise<void>> fenced;  // set when a fence arrives
  std::vector<caf::typed_response_promise<std::uint32_t>> held;
};

held_fence_reader::behavior_type held_fence(held_fence_reader::stateful_pointer<held_fence_state> self,
                                            std::shared_ptr<std::promise<void>> fenced) {
  self->state.fenced = std::move(fenced);
  return {
    [](stats_atom) { return reader_stats{}; },
    [](read_atom, const read_client&, const std::vector<read_item>&) {},
    [](adopt_atom, const buffer_table&) { return std::int32_t{0}; },
    [self](fence_atom) {
      self->state.held.push_back(self->make_response_promise<std::uint32_t>());
      self->state.fenced->set_value();
      return self->state.held.back();
    },
    [self](caf::ok_atom) {
      for (auto& p : self->state.held) p.deliver(std::uint32_t{0});
    },
  };
}

// Issue 12, item 9: a batch that died between its grant and its finish left its extents
// lent for good. They come back, but only once no reader can still write into them.
TEST_CASE("a batch that goes mid-read has its extents back after the readers' fence, not before") {
  caf::actor_system_config config;
  configure_actor_system(config);
  caf::actor_system system{config};
  read_section read;
  read.arena_size = 4 * mib;
  read.arena_chunk = 4 * mib;
  read.arena_pages = "plain";
  auto registrar = spawn_registrar(system, 1);
  auto fenced = std::make_shared<std::promise<void>>();
  auto reader = system.spawn(held_fence, fenced);
  caf::anon_send(registrar, caf::join_atom_v, caf::actor_cast<reader_actor>(reader));
  auto arena = spawn_arena(system, read, registrar);
  caf::scoped_actor self{system};
  auto stats = [&] {
    arena_stats s;
    self->request(arena, std::chrono::seconds(10), stats_atom_v)
      .receive([&](arena_stats& got) { s = got; },
               [&](caf::error& err) { FAIL("arena stats: " << system.render(err)); });
    return s;
  };
  {
    caf::scoped_actor batch{system};  // asks, is granted, and goes without a word
    batch->request(arena, std::chrono::seconds(30), alloc_atom_v,
                   std::vector<std::uint64_t>{mib}, true)
      .receive([](arena_grant& g) { CHECK(g.extents.size() == 1); },
               [&](caf::error& err) { FAIL("alloc: " << system.render(err)); });
  }
  REQUIRE(fenced->get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  auto s = stats();
  CHECK(s.leases == 1);  // a read may still be in flight: not lent again yet
  CHECK(s.free_bytes + mib <= s.ready_bytes);
  caf::anon_send(reader, caf::ok_atom_v);  // the reads completed
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((s = stats()).leases != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  CHECK(s.leases == 0);
  CHECK(s.abandoned == 1);
  for (auto a : {caf::actor_cast<caf::actor>(arena), caf::actor_cast<caf::actor>(registrar),
                 caf::actor_cast<caf::actor>(reader)})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
