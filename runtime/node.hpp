// The embedding API: a node is an actor system running spillway's actors over one data
// dir. Construct one from a validated config; destroy it (or call stop) to shut it
// down cleanly. This header is all an embedding cache node includes, so it stays free
// of CAF.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "messages/key_status.hpp"
#include "messages/stats.hpp"

namespace spillway {

// The node could not start; what() names the config key or the system call at fault.
class startup_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A value read back: `value` is set only when `status.ok()`.
struct read_value {
  key_status status;
  std::string value;
};

class node {
public:
  // Takes the data dir's lock, recovers its buckets, starts every actor and, when
  // node.listen is set, publishes the node actor there.
  explicit node(node_config config);
  ~node();  // stop()
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  // Seals the writer's open bucket, sends every actor its exit message and waits for
  // all of them. Idempotent.
  void stop();

  const node_config& config() const;

  // The port node.listen resolved to (it may ask for 0); 0 when not published.
  std::uint16_t listen_port() const;

  // Stores values[i] under keys[i]. The result has one status per key, ready once
  // each key is in a sealed, synced and published bucket, or has failed. The vectors
  // move into the writer's mailbox; each value is then copied once, into staging.
  // Throws std::invalid_argument when the vectors differ in length.
  std::future<std::vector<key_status>> put(std::vector<std::string> keys,
                                           std::vector<std::string> values);

  // Seals the open bucket, with every put() made before it; returns once published.
  void flush();

  // Reads values with pread and checks each (length, crc, key) before handing it out.
  std::vector<read_value> read_values(const std::vector<std::string>& keys);

  std::vector<std::uint8_t> exists(const std::vector<std::string>& keys);  // 1 = present
  std::uint64_t remove(const std::vector<std::string>& keys);             // how many were

  // `callback` runs on an actor thread with the keys of each evicted bucket, so the
  // embedding cache node can tell its master they are gone.
  void on_evicted(std::function<void(std::vector<std::string>)> callback);

  // The node actor's and the catalog's figures. Both throw std::runtime_error when
  // the node is stopped or does not answer within cluster.request_timeout_ms.
  node_stats stats();
  catalog_stats store_stats();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spillway
