#include "tests/transfer_fixtures.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "runtime/actor_system_setup.hpp"
#include "runtime/net/tcp_frame.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "tests/test_config.hpp"

namespace spillway::test {
namespace {

constexpr auto peer_start_limit = std::chrono::seconds(20);

std::uint64_t number_after(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  REQUIRE_MESSAGE(at != std::string::npos, "no " << key << " in: " << text);
  return std::stoull(text.substr(at + key.size()));
}

std::vector<std::string> peer_command(const temp_dir& dir, std::string_view config_toml,
                                      std::string segment_size,
                                      const std::vector<std::string>& export_to) {
  const auto config = dir.path() / "peer.toml";
  std::ofstream{config} << config_toml;
  std::vector<std::string> command{SPILLWAY_BINARY, "transfer-peer", "--segment-size",
                                   std::move(segment_size), "-c", config.string()};
  for (const auto& peer : export_to) command.insert(command.end(), {"--export-to", peer});
  return command;
}

}  // namespace

transfer_peer_child::transfer_peer_child(std::string_view config_toml, std::string segment_size,
                                         const std::vector<std::string>& export_to)
    : process_(peer_command(dir_, config_toml, std::move(segment_size), export_to)) {
  REQUIRE_MESSAGE(process_.wait_for_stderr("transfer-peer ready", peer_start_limit),
                  "transfer-peer said: " << process_.err());
  control_port = static_cast<std::uint16_t>(number_after(process_.err(), "control="));
  data_port = static_cast<std::uint16_t>(number_after(process_.err(), "data="));
  segment = number_after(process_.err(), "segment=");
  read_only_segment = number_after(process_.err(), "read_only=");
}

std::vector<std::byte> hello_bytes(std::uint64_t route, const std::string& secret) {
  const auto header =
    encode_frame({frame_kind::hello, transfer_error::none, 0, route, 0, secret.size()});
  std::vector<std::byte> bytes(header.begin(), header.end());
  for (const char c : secret) bytes.push_back(static_cast<std::byte>(c));
  return bytes;
}

unique_fd admitted_connection(std::uint16_t port, std::uint64_t route,
                              const std::string& secret) {
  int error = 0;
  auto fd = connect_tcp("127.0.0.1", port, error);
  REQUIRE(fd);
  const auto hello = hello_bytes(route, secret);
  REQUIRE(send_all(fd.get(), hello.data(), hello.size()));
  return fd;
}

networked_system::networked_system() : system(configure_actor_system(config)) {}

std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (std::size_t i = 0; i + 8 <= size; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(&bytes[i], &x, 8);
  }
  return bytes;
}

std::uint16_t unused_port() {
  const auto probe = listen_tcp("127.0.0.1", 0);
  return local_port(probe.get());  // closed on return
}

node_config transfer_node(const temp_dir& dir, const std::string& transport) {
  auto config = private_node(dir.path());
  config.node.log_level = "warn";
  config.read.readers = 1;
  config.transfer.transport = transport;
  config.transfer.listen = "127.0.0.1:0";
  config.transfer.slicers = 1;
  config.transfer.tcp_lanes = 2;
  return config;
}

}  // namespace spillway::test
