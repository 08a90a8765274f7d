// The node's pull (messages/service.hpp) asked by another actor system over the network
// with sources a client of ours never sends: empty, wrapping, past the segment's end, in
// a segment that does not exist, larger than any value. Each fails its key alone as
// bad_range or too_large with a reason naming the field, before the node takes memory
// for it or asks a lane; the good key beside them is stored exact.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "actors/transfer_engine.hpp"
#include "messages/service.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/remote_service.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

using keys = std::vector<std::string>;

// Built field by field: GCC 12 takes a braced one for uninitialized (-Wmaybe-uninitialized).
pull_request pulling(const std::string& host, std::uint16_t port, keys names,
                     std::vector<value_source> from) {
  pull_request r;
  r.client.host = host;
  r.client.port = port;
  r.keys = std::move(names);
  r.sources = std::move(from);
  return r;
}

bool names(const std::string& reason, const std::string& field) {
  return reason.rfind(field, 0) == 0;  // the reason starts with the field
}

TEST_SUITE("service") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "a hostile pull fails each bad source by name and stores the good one exact") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  test::remote_service peer{n.listen_port()};

  CHECK(peer.refusal(pull_atom_v, pulling("127.0.0.1", 1, {"a", "b"}, {{1, 0, 8}}))
          .find("2 keys but 1 sources") != std::string::npos);
  CHECK(peer.refusal(pull_atom_v, pulling("", 0, {"a"}, {{1, 0, 8}})).find("client") !=
        std::string::npos);

  // A real transfer host in the peer's process, one 8 MiB segment holding a value.
  transfer_section mine;
  mine.listen = "127.0.0.1:0";
  transfer_engine host{*peer.system, mine, {}};
  const auto value = generated_value(8 << 20, 14, "good");
  std::string memory = value;
  const auto segment =  // as a client's memory: every peer that described
    host.register_segment(memory.data(), memory.size(), segment_export::to_admitted_peers()).id;
  const auto got = peer.ask<put_reply>(
    pull_atom_v, pulling("127.0.0.1", host.control_port(),
                         {"good", "empty", "wraps", "past", "nowhere", "", "huge"},
                         {{segment, 0, memory.size()},
                          {segment, 0, 0},
                          {segment, ~0ull - 10, 100},
                          {segment, 4 << 20, 8 << 20},
                          {segment + 7, 0, 8},
                          {segment, 0, 8},
                          {segment, 0, 5ull << 32}}));
  const key_status bad_range{key_error::bad_range, 0};
  REQUIRE(got.keys.size() == 7);
  REQUIRE(got.reasons.size() == 7);
  CHECK_MESSAGE(got.keys[0].ok(), to_string(got.keys[0]));
  CHECK(got.reasons[0].empty());
  CHECK(got.keys[1] == bad_range);
  CHECK_MESSAGE(names(got.reasons[1], "sources[1].size"), got.reasons[1]);
  CHECK(got.keys[2] == bad_range);
  CHECK_MESSAGE(names(got.reasons[2], "sources[2].offset"), got.reasons[2]);
  CHECK(got.keys[3] == bad_range);
  CHECK_MESSAGE(names(got.reasons[3], "sources[3]: bytes"), got.reasons[3]);
  CHECK(got.keys[4] == bad_range);
  CHECK_MESSAGE(names(got.reasons[4], "sources[4].segment"), got.reasons[4]);
  CHECK(got.keys[5] == key_status{key_error::bad_key, 0});
  CHECK_MESSAGE(names(got.reasons[5], "keys[5]"), got.reasons[5]);
  CHECK(got.keys[6] == key_status{key_error::too_large, 0});
  CHECK_MESSAGE(names(got.reasons[6], "sources[6].size"), got.reasons[6]);

  // Refused before a lane was asked: only the good value was read, whole.
  const auto asked = n.transfers().requests;
  CHECK(asked[static_cast<std::size_t>(transfer_error::none)] == 1);
  CHECK(asked[static_cast<std::size_t>(transfer_error::out_of_bounds)] == 0);
  CHECK(asked[static_cast<std::size_t>(transfer_error::unknown_segment)] == 0);
  CHECK(n.read_values({"good"}).at(0).value == value);
  CHECK(n.exists({"empty", "wraps", "past", "nowhere", "huge"}) ==
        std::vector<std::uint8_t>(5, 0));

  // A put carries its values inline: a large one is refused, saying how to put it.
  const auto inline_put =
    peer.ask<put_reply>(caf::put_atom_v, keys{"big"}, keys{std::string(inline_value_max + 1, 'b')});
  CHECK(inline_put.keys.at(0) == key_status{key_error::too_large, 0});
  CHECK_MESSAGE(inline_put.reasons.at(0).find("registered memory") != std::string::npos,
                inline_put.reasons.at(0));
  host.stop();
  check_arena(n);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
