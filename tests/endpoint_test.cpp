#include <doctest/doctest.h>

#include "config/endpoint.hpp"

namespace spillway {
namespace {

TEST_SUITE("endpoint") {

TEST_CASE("host:port parses into host and port") {
  const auto e = parse_endpoint("127.0.0.1:7400");
  REQUIRE(e);
  CHECK(e->host == "127.0.0.1");
  CHECK(e->port == 7400);
  CHECK(parse_endpoint("localhost:0")->port == 0);
  CHECK(parse_endpoint("node-b.example:65535")->port == 65535);
}

TEST_CASE("bracketed IPv6 hosts lose their brackets") {
  const auto e = parse_endpoint("[::1]:9");
  REQUIRE(e);
  CHECK(e->host == "::1");
  CHECK(e->port == 9);
}

TEST_CASE("malformed endpoints are refused") {
  for (const char* bad : {"", ":80", "host", "host:", "host:65536", "host:-1", "host:8x",
                          "::1:80", "[]:80", "[::1:80", "host: 80"})
    CHECK_MESSAGE(!parse_endpoint(bad), bad);
}

TEST_CASE("loopback hosts are told from the rest") {
  for (const char* host : {"localhost", "127.0.0.1", "127.3.2.1", "::1"})
    CHECK_MESSAGE(is_loopback(host), host);
  for (const char* host : {"0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "::ffff:127.0.0.1", "example.com", ""})
    CHECK_MESSAGE(!is_loopback(host), host);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
