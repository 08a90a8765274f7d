// The embedding API: a node is an actor system running spillway's actors. Construct
// one from a validated config; destroy it (or call stop) to shut it down cleanly.
// This header is all an embedding cache node includes, so it stays free of CAF.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "config/config.hpp"
#include "messages/stats.hpp"

namespace spillway {

// The node could not start; what() names the config key or the system call at fault.
class startup_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class node {
public:
  // Starts every actor and, when node.listen is set, publishes the node actor there.
  explicit node(node_config config);
  ~node();  // stop()
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  // Sends every actor its exit message and waits for all of them. Idempotent.
  void stop();

  const node_config& config() const;

  // The port node.listen resolved to (it may ask for 0); 0 when not published.
  std::uint16_t listen_port() const;

  // Asks the node actor; throws std::runtime_error when it does not answer in
  // cluster.request_timeout_ms.
  node_stats stats();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spillway
