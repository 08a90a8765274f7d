// A remote client of a spillway cluster: the nodes of cluster.nodes, each a
// `spillway serve` reached through CAF's middleman (README "Running a cluster"). Keys
// are placed by rendezvous hashing (runtime/placement.hpp); every batch call sends one
// request per node at once and answers in the caller's order, one status per key.
// A node that is down fails its keys as `unavailable` at once, not after
// cluster.request_timeout_ms: the client watches each connection and reconnects in
// the background. put and get carry values inside messages, so each is at most
// inline_value_max (messages/service.hpp, 4 MiB); a larger one is too_large. get_into
// and put_from's larger values carry none: the client runs a transfer host of its own
// (transfer.listen, a free port on 127.0.0.1 by default), its register_memory makes
// buffers segments of it, and each node writes its values there, or reads the values
// to put from there, through its transfer engine. Free of CAF, like node.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
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

// The client's own transfer host: tcp on a free port of 127.0.0.1. Nodes connect to
// transfer.listen's host, so off this machine it must name an address they reach.
transfer_section client_transfer_defaults();

class client {
public:
  // cluster.nodes, cluster.replicas, cluster.request_timeout_ms; `transfer` for the
  // transfer host get_into needs (started by the first register_memory); `security`:
  // the certificate, key and CA of a cluster whose control channel speaks TLS. Throws
  // std::invalid_argument naming the key when no node is listed, one is listed twice,
  // or replicas exceeds the nodes, and startup_error naming a TLS file it cannot use.
  explicit client(const cluster_section& cluster,
                  transfer_section transfer = client_transfer_defaults(),
                  const security_section& security = {});
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // Each key goes to the first `replicas` owners that take it, in rendezvous order
  // (a node that is down passes its turn to the next); ok once one of them has it
  // sealed and synced, else the first owner's error. A value over inline_value_max
  // (4 MiB) is too_large here: put it from registered memory with put_from.
  std::vector<key_status> put(const std::vector<std::string>& keys,
                              const std::vector<std::string>& values);

  // The largest value that travels inside a message (put); larger ones only put_from.
  static std::uint64_t inline_value_limit();

  // put(), each value from the caller's memory. One of at most inline_value_max bytes
  // is copied into the message as put() sends it; a larger one must lie inside memory
  // registered with register_memory (else bad_range, that key alone), and each owner
  // reads it from there through its transfer engine into its arena and puts it from
  // there: it never travels in a message. The memory must keep the values until this
  // returns (a key that timed out may still be read after).
  std::vector<key_status> put_from(const std::vector<std::string>& keys,
                                   const std::vector<std::span<const std::byte>>& values);

  // Each key is asked of its owners in order until one has it: a node that answers
  // not_found (or corrupt, io_error) counts, one that is down does not; after
  // `replicas` answers the key is not_found, or unavailable if a node that may hold
  // it was down. Values are checked (length, crc32c) by the node that read them.
  std::vector<read_value> get(const std::vector<std::string>& keys);

  // Memory that nodes may write values into (get_into) and read values to put from
  // (put_from): [base, base + length) becomes a segment of this client's transfer host,
  // started by the first call, exported read-write to the peers its control channel
  // admits (with TLS, the cluster's nodes; README "Data lanes"). Throws
  // std::invalid_argument for an empty region or one overlapping another, and
  // std::runtime_error when the transfer host cannot start (transfer.listen taken).
  void register_memory(void* base, std::uint64_t length);
  // Withdraws the region: get_into refuses buffers in it, and no node reaches it once
  // this returns (a frame moving its bytes ends first), so the memory may be freed then.
  // Throws std::invalid_argument when no region starts at `base`.
  void unregister_memory(void* base);

  // get(), each value written by its node straight into `buffers[i]`, which must lie in
  // registered memory: the value never travels inside a message, nor is it copied on
  // this side. `sizes[i]` gets the value's size, also for a buffer too small for it
  // (too_large, that key alone). Owners are asked in order as get() asks them. A key
  // that is not ok leaves its buffer's content undefined; one that timed out may still
  // be written to later. Throws std::invalid_argument, naming the key, for a buffer
  // outside registered memory, before any node is asked.
  std::vector<key_status> get_into(const std::vector<std::string>& keys,
                                   const std::vector<std::span<std::byte>>& buffers,
                                   std::vector<std::size_t>& sizes);

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
