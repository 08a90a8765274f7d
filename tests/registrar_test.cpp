// The registrar with real threads and fake readers that say when they get a turn: one
// that hangs in its first turn and one that answers at once.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/registrar.hpp"
#include "runtime/actor_system_setup.hpp"

namespace spillway {
namespace {

constexpr std::chrono::milliseconds turn_timeout{100};
constexpr std::chrono::seconds patience{10};  // for a turn that must come
constexpr std::size_t chunk_size = 2 << 20;

struct turn_state {
  int turns = 0;
};

// Tells `witness` of each turn: its name and the chunks the table has ready. With
// `hangs`, the first turn is never answered, as a reader stuck in the kernel would.
reader_actor::behavior_type turn_teller(reader_actor::stateful_pointer<turn_state> self,
                                        caf::actor witness, std::string name, bool hangs) {
  return {
    [](stats_atom) { return reader_stats{}; },
    [](read_atom, const read_client&, const std::vector<read_item>&) {},
    [=](adopt_atom, const buffer_table& table) {
      std::size_t ready = 0;
      for (auto address : table.addresses) ready += address != 0;
      caf::anon_send(witness, caf::ok_atom_v, name, ready);
      auto answer = self->make_response_promise<std::int32_t>();
      if (!hangs || ++self->state.turns > 1) answer.deliver(std::int32_t{0});
      return answer;
    },
    [](fence_atom) { return std::uint32_t{0}; },
  };
}

TEST_SUITE("registrar") {

TEST_CASE("a reader whose turn timed out still gets the chunks that come later") {
  caf::actor_system_config caf_config;
  caf::actor_system system{configure_actor_system(caf_config)};
  caf::scoped_actor self{system};
  std::unique_ptr<void, decltype(&std::free)> chunk{std::aligned_alloc(chunk_size, chunk_size),
                                                    &std::free};
  auto registrar = spawn_registrar(system, 1, turn_timeout);
  const auto witness = caf::actor_cast<caf::actor>(self);
  auto slow = system.spawn(turn_teller, witness, std::string("slow"), true);
  auto fast = system.spawn(turn_teller, witness, std::string("fast"), false);
  auto wait_for_turn = [&](const std::string& who, std::size_t ready) {
    for (bool seen = false; !seen;)
      self->receive([&](caf::ok_atom, const std::string& name,
                        std::size_t n) { seen = name == who && n >= ready; },
                    caf::after(patience) >> [&] {
                      FAIL(who << " got no turn with " << ready << " chunks ready");
                    });
  };
  caf::anon_send(registrar, caf::join_atom_v, caf::actor_cast<reader_actor>(slow));
  wait_for_turn("slow", 0);  // and hangs in it
  caf::anon_send(registrar, caf::join_atom_v, caf::actor_cast<reader_actor>(fast));
  wait_for_turn("fast", 0);  // only once the slow one's turn timed out
  caf::anon_send(registrar, caf::add_atom_v, std::uint32_t{0},
                 reinterpret_cast<std::uint64_t>(chunk.get()), std::uint64_t{chunk_size});
  wait_for_turn("slow", 1);
  for (auto a : {caf::actor_cast<caf::actor>(registrar), caf::actor_cast<caf::actor>(slow),
                 caf::actor_cast<caf::actor>(fast)})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
