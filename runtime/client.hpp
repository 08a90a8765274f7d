// A remote client of a spillway cluster: the nodes of cluster.nodes, each a
// `spillway serve` reached through CAF's middleman (README "Running a cluster"). Keys
// are placed by rendezvous hashing (runtime/placement.hpp); every batch call sends one
// request per node at once and answers in the caller's order, one status per key.
// A node that is down fails its keys as `unavailable` at once, not after
// cluster.request_timeout_ms: the client watches each connection and reconnects in
// the background. Values travel inside messages, so each is at most inline_value_max
// (messages/service.hpp, 4 MiB); a larger one is too_large. Free of CAF, like node.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "messages/stats.hpp"
#include "runtime/node.hpp"
#include "runtime/placement.hpp"
#include "runtime/storage/key_status.hpp"

namespace spillway {

struct exists_result {
  std::vector<std::uint8_t> present;  // 1 = some node holds the key
  std::size_t prefix = 0;             // how many leading keys are present
};

// One node's answer to stats(): `report` is set when `error` is empty.
struct node_report_result {
  std::string node;
  std::string error;
  node_report report;
};

class client {
public:
  // cluster.nodes, cluster.replicas, cluster.request_timeout_ms. Throws
  // std::invalid_argument naming the key when no node is listed, one is listed twice,
  // or replicas exceeds the nodes.
  explicit client(const cluster_section& cluster);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // Each key goes to the first `replicas` owners that take it, in rendezvous order
  // (a node that is down passes its turn to the next); ok once one of them has it
  // sealed and synced, else the first owner's error.
  std::vector<key_status> put(const std::vector<std::string>& keys,
                              const std::vector<std::string>& values);

  // Each key is asked of its owners in order until one has it: a node that answers
  // not_found (or corrupt, io_error) counts, one that is down does not; after
  // `replicas` answers the key is not_found, or unavailable if a node that may hold
  // it was down. Values are checked (length, crc32c) by the node that read them.
  std::vector<read_value> get(const std::vector<std::string>& keys);

  exists_result exists(const std::vector<std::string>& keys);

  // Removes the keys from every node that is up (a put made while an owner was down
  // lives further down the ranking); returns the copies removed.
  std::uint64_t remove(const std::vector<std::string>& keys);

  // Every node's figures, in cluster.nodes order.
  std::vector<node_report_result> stats();

  // Waits until every node is connected or `limit` passes; returns how many are.
  std::size_t await_connected(std::chrono::milliseconds limit);

  const placement& placed() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spillway
