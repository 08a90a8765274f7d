// One `spillway serve` child with a config file of its own, as the multi-process tests
// (cluster, graceful stop, hostile peers, the CLI against nodes) start them: on a free
// port on 127.0.0.1, restarted on the same port and data dir.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway::test {

class serve_process {
  temp_dir dir_;  // first: data_dir starts inside it

public:
  // Set before start(): the data dir (default: a fresh one), and TOML keys added to
  // the [node], [storage], [read], [transfer] and [security] tables of the config file
  // (by default the transfer engine on free ports, so that nodes side by side do not
  // collide, and no [security] table).
  std::filesystem::path data_dir;
  std::string node_keys;
  std::string storage_keys = "seal_after_ms = 5\n";
  std::string read_keys;
  std::string transfer_keys = "listen = \"127.0.0.1:0\"\n";
  std::string security_keys;  // a [security] table when set (TLS: tests/tls_test.cpp)

  serve_process();

  // Starts it on `port` (0: a free one) and waits until it serves.
  void start(std::uint16_t port = 0);
  void kill();  // SIGKILL, reaped
  // Sends `signal` and reaps it; its exit code.
  int stop(int signal);

  child_process& process() { return *process_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::uint16_t port() const { return port_; }
  std::string config_file() const { return (dir_.path() / "node.toml").string(); }

private:
  std::optional<child_process> process_;
  std::uint16_t port_ = 0;
};

}  // namespace spillway::test
