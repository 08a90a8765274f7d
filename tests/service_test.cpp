// The node service (messages/service.hpp) asked by another actor system over the
// network, as a remote client would, with requests a client of ours never sends.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/service.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/remote_service.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

using keys = std::vector<std::string>;
using test::remote_service;

// Sends `bytes` to the port on a connection of its own, as a port scanner or a confused
// client would; true once the node has closed it, false if still open after 30 s.
bool hung_up_after(std::uint16_t port, const std::string& bytes) {
  int error = 0;
  const auto peer = connect_tcp("127.0.0.1", port, error);
  REQUIRE_MESSAGE(peer, std::strerror(error));
  REQUIRE(send_all(peer.get(), bytes.data(), bytes.size()));
  const timeval patience{30, 0};
  ::setsockopt(peer.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  char sink[4096];
  for (;;) {  // the node's handshake comes first, then the close
    const auto got = ::recv(peer.get(), sink, sizeof sink, 0);
    if (got == 0) return true;
    if (got < 0) return false;
  }
}

TEST_SUITE("service") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "a remote put, values, exists, remove and report answer per key") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  remote_service s{n.listen_port()};
  const std::string big(inline_value_max + 1, 'x');
  const auto put = s.ask<put_reply>(caf::put_atom_v, keys{"a", "", "big", "b"},
                                    keys{"1", "2", big, std::string(70000, 'b')});
  CHECK(put.keys == std::vector<key_status>{{}, {key_error::bad_key, 0},
                                            {key_error::too_large, 0}, {}});
  const auto got = s.ask<values_reply>(values_atom_v, keys{"b", "nope", "a"});
  CHECK(got.answered == 3);
  CHECK(got.status == std::vector<key_status>{{}, {key_error::not_found, 0}, {}});
  CHECK(got.values[0] == std::string(70000, 'b'));
  CHECK(got.values[2] == "1");
  const auto there = s.ask<exists_reply>(exists_atom_v, keys{"a", "b", "nope", "a"});
  CHECK(there.present == std::vector<std::uint8_t>{1, 1, 0, 1});
  CHECK(there.prefix == 2);
  CHECK(s.ask<std::uint64_t>(caf::delete_atom_v, keys{"a", "nope"}) == 1);
  CHECK(s.ask<node_report>(report_atom_v).store.keys == 1);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "a reply stops at what one message may carry and the rest is asked again") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  remote_service s{n.listen_port()};
  keys names, values;
  for (int i = 0; i < 20; ++i) {  // 80 MiB in all, over inline_bytes_max
    names.push_back(std::to_string(i));
    values.push_back(std::string(inline_value_max, static_cast<char>('a' + i)));
  }
  for (std::size_t at = 0; at < names.size(); at += 10) {
    const keys part(names.begin() + at, names.begin() + at + 10);
    const keys vals(values.begin() + at, values.begin() + at + 10);
    for (const auto& st : s.ask<put_reply>(caf::put_atom_v, part, vals).keys) REQUIRE(st.ok());
  }
  const auto got = s.ask<values_reply>(values_atom_v, names);
  CHECK(got.answered == inline_bytes_max / inline_value_max);
  for (std::size_t k = 0; k < got.answered; ++k) CHECK(got.values[k] == values[k]);
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "a remote request over the bounds is refused, naming the field") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  remote_service s{n.listen_port()};
  const keys too_many(service_keys_max + 1, "k");
  CHECK(s.refusal(exists_atom_v, too_many).find("keys") != std::string::npos);
  CHECK(s.refusal(values_atom_v, too_many).find("keys") != std::string::npos);
  CHECK(s.refusal(caf::put_atom_v, keys{"a", "b"}, keys{"1"}).find("2 keys but 1 values") !=
        std::string::npos);
  const keys seventeen(17, std::string(inline_value_max, 'v'));
  CHECK(s.refusal(caf::put_atom_v, keys(17, "k"), seventeen).find("values") != std::string::npos);
  CHECK(s.ask<node_report>(report_atom_v).store.keys == 0);  // and it keeps serving
  check_arena(n);
}

TEST_CASE_FIXTURE(test::node_leaks, "keys of 0 bytes and of 70 KB get their own error and the rest are served") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  remote_service s{n.listen_port()};
  const std::string huge(70000, 'k');  // over bucket_format::max_key_size
  const auto put = s.ask<put_reply>(caf::put_atom_v, keys{"", huge, "a"}, keys{"1", "2", "3"});
  CHECK(put.keys == std::vector<key_status>{{key_error::bad_key, 0}, {key_error::too_large, 0}, {}});
  const auto got = s.ask<values_reply>(values_atom_v, keys{huge, "", "a"});
  CHECK(got.answered == 3);
  CHECK(got.status[0] == key_status{key_error::too_large, 0});
  CHECK(got.status[1] == key_status{key_error::bad_key, 0});
  CHECK(got.status[2].ok());
  CHECK(got.values[2] == "3");
  CHECK(s.ask<exists_reply>(exists_atom_v, keys{huge, "", "a"}).present ==
        std::vector<std::uint8_t>{0, 0, 1});
  CHECK(s.ask<std::uint64_t>(caf::delete_atom_v, keys{huge, ""}) == 0);
  CHECK(s.ask<node_report>(report_atom_v).store.keys == 1);
  check_arena(n);
}

// A raw socket, not a CAF peer: what a port scanner or a confused client sends.
TEST_CASE_FIXTURE(test::node_leaks, "a peer sending garbage to the service port is dropped and the node keeps serving") {
  test::temp_dir dir;
  node n{test::published_node(dir.path())};
  // Over one BASP header (32 bytes): a shorter one is waited for, holding nothing.
  CHECK(hung_up_after(n.listen_port(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  CHECK(hung_up_after(n.listen_port(), std::string(4096, '\xff')));
  {  // a header cut short, then the peer goes
    int error = 0;
    const auto peer = connect_tcp("127.0.0.1", n.listen_port(), error);
    REQUIRE(peer);
    REQUIRE(send_all(peer.get(), "\x01\x00\x00", 3));
  }
  remote_service s{n.listen_port()};
  CHECK(s.ask<put_reply>(caf::put_atom_v, keys{"a"}, keys{"1"}).keys == std::vector<key_status>{{}});
  CHECK(s.ask<values_reply>(values_atom_v, keys{"a"}).values.at(0) == "1");
  check_arena(n);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
