// "host:port" as the config writes addresses (node.listen, transfer.listen,
// cluster.nodes). IPv6 hosts go in brackets: "[::1]:7400".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spillway {

struct endpoint {
  std::string host;
  std::uint16_t port = 0;
};

// nullopt unless the text is a non-empty host, a colon and a port from 0 to 65535.
std::optional<endpoint> parse_endpoint(std::string_view text);

// Whether only this machine can reach a listener on `host`: "localhost", 127.0.0.0/8, ::1.
bool is_loopback(const std::string& host);

}  // namespace spillway
