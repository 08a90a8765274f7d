// A `spillway serve` child for `bench e2e`: its config written into a dir of its own,
// started from /proc/self/exe, its node.listen port read from its log. It is killed
// (SIGKILL) and reaped when this object goes, on every way out of the bench, a throw
// included. Its stderr is drained on a thread of its own, so a node that logs never
// blocks on a full pipe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include "runtime/io/unique_fd.hpp"

namespace spillway::bench {

class serve_child {
public:
  // Writes `toml` to dir/node.toml and waits until the node serves; throws
  // std::runtime_error with what it logged when it does not.
  serve_child(const std::filesystem::path& dir, const std::string& toml);
  ~serve_child();
  serve_child(const serve_child&) = delete;
  serve_child& operator=(const serve_child&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

private:
  pid_t pid_ = -1;
  unique_fd stderr_fd_;
  std::thread drain_;
  std::uint16_t port_ = 0;
};

}  // namespace spillway::bench
