// The node's get_into (messages/service.hpp) asked by another actor system over the
// network with requests a client of ours never sends: over the bounds, naming no
// transfer host, a host nobody runs, placements outside the client's segment. Each is
// refused or fails per key, by name, and the node keeps serving with its arena whole.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <caf/scoped_actor.hpp>

#include "actors/transfer_engine.hpp"
#include "messages/service.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/remote_system.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

using keys = std::vector<std::string>;

struct hostile_client : test::remote_system<remote_node_actor> {
  using remote_system::remote_system;

  // The reply, or on error an empty one and the rendered error in `refused`.
  get_into_reply ask(get_into_request request, std::string& refused) {
    caf::scoped_actor self{*system};
    get_into_reply reply;
    self->request(remote, std::chrono::seconds(30), get_into_atom_v, std::move(request))
      .receive([&](get_into_reply& r) { reply = std::move(r); },
               [&](caf::error& err) { refused = system->render(err); });
    return reply;
  }
};

// Built field by field: GCC 12 takes a braced one for uninitialized (-Wmaybe-uninitialized).
get_into_request asking(const std::string& host, std::uint16_t port, keys names,
                        std::vector<value_placement> where) {
  get_into_request r;
  r.client.host = host;
  r.client.port = port;
  r.keys = std::move(names);
  r.placements = std::move(where);
  return r;
}

// A port nothing listens on: one that was free a moment ago.
std::uint16_t closed_port() {
  const auto listener = listen_tcp("127.0.0.1", 0);
  return local_port(listener.get());
}

TEST_SUITE("service") {

TEST_CASE_FIXTURE(test::node_leaks, "a hostile get_into is refused by field or fails per key and the node keeps serving") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  for (const auto& s : n.put({"small", "big"}, {"1", std::string(70000, 'b')}).get())
    REQUIRE(s.ok());
  hostile_client peer{n.listen_port()};
  std::string refused;

  peer.ask(asking("127.0.0.1", 1, keys(service_keys_max + 1, "k"), {}), refused);
  CHECK_MESSAGE(refused.find("keys") != std::string::npos, refused);
  peer.ask(asking("127.0.0.1", 1, {"a", "b"}, {{1, 0, 8}}), refused);
  CHECK_MESSAGE(refused.find("2 keys but 1 placements") != std::string::npos, refused);
  peer.ask(asking("", 0, {"a"}, {{1, 0, 8}}), refused);
  CHECK_MESSAGE(refused.find("client") != std::string::npos, refused);

  refused.clear();
  const auto nobody = peer.ask(asking("127.0.0.1", closed_port(), {"small"}, {{1, 0, 8}}), refused);
  REQUIRE_MESSAGE(refused.empty(), refused);
  CHECK(nobody.status == std::vector<key_status>{{key_error::unavailable, 0}});

  // A real transfer host in the peer's process, one 64 KiB segment: "big" claims room
  // the segment does not have, and a segment that does not exist.
  transfer_section mine;
  mine.listen = "127.0.0.1:0";
  transfer_engine host{*peer.system, mine, {}};
  std::vector<char> memory(64 << 10, '\0');
  const auto segment =  // as a client's memory: every peer that described
    host.register_segment(memory.data(), memory.size(), segment_export::to_admitted_peers()).id;
  const auto got = peer.ask(asking("127.0.0.1", host.control_port(),
                                   {"small", "big", "small", "nope"},
                                   {{segment, 0, 8}, {segment, 100, 1ull << 40},
                                    {segment + 7, 0, 8}, {segment, 200, 8}}),
                            refused);
  REQUIRE_MESSAGE(refused.empty(), refused);
  CHECK(got.status == std::vector<key_status>{{},
                                              {key_error::unavailable, 0},
                                              {key_error::unavailable, 0},
                                              {key_error::not_found, 0}});
  CHECK(got.sizes[0] == 1);
  CHECK(memory[0] == '1');
  CHECK(memory[100] == '\0');  // nothing of "big" landed
  const auto refusals = n.transfers().requests;
  CHECK(refusals[static_cast<std::size_t>(transfer_error::out_of_bounds)] == 1);
  CHECK(refusals[static_cast<std::size_t>(transfer_error::unknown_segment)] == 1);
  host.stop();
  check_arena(n);
  CHECK(n.read_values({"big"}).at(0).value == std::string(70000, 'b'));  // still serving
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
