// The embedding API: a node is an actor system running spillway's actors over one data
// dir. Construct one from a validated config; destroy it (or call stop) to shut it
// down cleanly. This header is all an embedding cache node includes, so it stays free
// of CAF.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "runtime/storage/key_status.hpp"
#include "messages/stats.hpp"
#include "runtime/net/segment.hpp"
#include "runtime/net/slice.hpp"
#include "runtime/transfer_peer.hpp"

namespace spillway {

// The node could not start; what() names the config key or the system call at fault.
class startup_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A value read back into memory of its own: `value` is set only when `status.ok()`.
struct read_value {
  key_status status;
  std::string value;
};

// Values read by node::get_batch: views into the node's arena, valid while this object
// lives: no clock takes them back, and the arena lends their memory again only after
// it is destroyed or release() is called. It must not outlive its node.
class batch_values {
public:
  struct value {
    key_status status;
    std::span<const std::byte> bytes;  // empty unless status.ok()
  };

  batch_values() = default;
  batch_values(batch_values&&) = default;
  batch_values& operator=(batch_values&& other) {
    release();
    values_ = std::move(other.values_);
    release_ = std::move(other.release_);
    return *this;
  }
  ~batch_values() { release(); }

  const std::vector<value>& values() const { return values_; }
  void release() {
    if (release_) std::exchange(release_, nullptr)();
  }

private:
  friend class node;
  std::vector<value> values_;
  std::function<void()> release_;
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

  // The first half of a graceful stop: node.listen stops accepting connections, remote
  // requests on open ones are refused (a client hears unavailable), the open bucket is
  // sealed, and this returns once every remote request taken before is answered: true,
  // or false when the node could not be asked. stop() comes next. No deadline of its
  // own: the caller bounds the wait (spillway serve: node.stop_timeout_ms).
  bool drain();

  const node_config& config() const;

  // The port node.listen resolved to (it may ask for 0); 0 when not published.
  std::uint16_t listen_port() const;
  // The port node.metrics_listen resolved to; 0 when /metrics is not served.
  std::uint16_t metrics_port() const;

  // Stores values[i] under keys[i]. The result has one status per key, ready once
  // each key is durable (written and fdatasynced with the puts queued beside it: group
  // commit) and readable, or has failed; its bucket seals later. The vectors
  // move into the writer's mailbox; each value is then copied once, into staging.
  // Throws std::invalid_argument when the vectors differ in length.
  std::future<std::vector<key_status>> put(std::vector<std::string> keys,
                                           std::vector<std::string> values);

  // put() from memory the caller keeps as it is until the future is ready, which it
  // is only once the writer is done with it (there is no deadline). Each value's whole
  // pages go to disk straight from there when it starts on a 4 KiB boundary and the
  // filesystem takes O_DIRECT; its last partial page, and values that do not start on a
  // page, are copied into staging as put() copies (io().written_in_place_bytes and
  // written_copied_bytes count both). Registering the memory is not needed for this.
  std::future<std::vector<key_status>> put_from(
    std::vector<std::string> keys, const std::vector<std::span<const std::byte>>& values);

  // Seals the open bucket, with every put() made before it; returns once published.
  void flush();

  // Reads the keys' values, all buckets at once through the readers, and checks each
  // (length, crc32c, key, bucket) before handing it out; one status per key. `mode`
  // ("window" or "group") overrides read.mode for this batch: the benchmarks compare.
  batch_values get_batch(const std::vector<std::string>& keys, const std::string& mode = "");

  // The same, into `buffers[i]` for keys[i]; `sizes[i]` gets the value's size, also for
  // a buffer too small for it (too_large). A value of the current bucket format lands in
  // place, read by the disk straight into a buffer that is page-aligned (4 KiB) and
  // large enough, with read_fixed where the buffer lies in registered memory
  // (register_memory); only a partial last page goes through the arena, and only the
  // value's bytes of it are copied: nothing past sizes[i] is written. Other values, and
  // every value for other buffers, are read into the arena and copied. A key that is not
  // ok leaves its buffer's content undefined (a corrupt value may have been read there).
  // A key that timed out may still have a read in flight into its buffer.
  std::vector<key_status> get_batch_into(const std::vector<std::string>& keys,
                                         const std::vector<std::span<std::byte>>& buffers,
                                         std::vector<std::size_t>& sizes);

  // Caller memory that reads may land in without a copy through the arena: every
  // reader's ring registers [base, base + length) as fixed buffers, one reader at a time
  // (actors/registrar.hpp), so reads into it use read_fixed. Up to read.memory_slots
  // pieces of at most 1 GiB in all. Memory not registered still works, as before.
  // Throws std::invalid_argument for an empty region or one overlapping another, and
  // std::length_error when the slots run out.
  void register_memory(void* base, std::uint64_t length);
  // Returns once no reader's ring holds the region any more: its memory may go then.
  // Reads into it must have returned. Throws std::invalid_argument when no region
  // starts at `base`, std::runtime_error when the node is stopped or does not answer.
  void unregister_memory(void* base);

  // get_batch, each value copied into a string of its own.
  std::vector<read_value> read_values(const std::vector<std::string>& keys);

  std::vector<std::uint8_t> exists(const std::vector<std::string>& keys);  // 1 = present
  // Removes the keys: answered once the removal is durable (a forget-log entry per key,
  // fdatasynced with the removes and puts queued beside it), so no restart brings them
  // back; how many were stored. Throws std::runtime_error when it could not be made
  // durable (the keys stay, or may be gone after a restart).
  std::uint64_t remove(const std::vector<std::string>& keys);

  // `callback` runs on a thread of its own with the keys of each evicted bucket, so the
  // embedding cache node can tell its master they are gone (and may block doing so).
  void on_evicted(std::function<void(std::vector<std::string>)> callback);

  // The node actor's and the catalog's figures. Both throw std::runtime_error when
  // the node is stopped or does not answer within cluster.request_timeout_ms.
  node_stats stats();
  catalog_stats store_stats();
  arena_stats read_stats();
  // Keys and bytes read and written, per-key errors by kind, get and put latencies.
  io_stats io();
  // Bytes, slices, retries and failures of this node's transfers, the refusals of its
  // tcp server; zero before the transfer engine started.
  transfer_stats transfers();
  // All of them as Prometheus text (runtime/metrics.hpp), as /metrics serves it.
  std::string metrics();

  // The transfer engine (DESIGN.md "Transfer", transfer.transport local, tcp or
  // rdma). Its services (the tcp server on transfer.listen, or the rdma devices; a
  // transfer host for descriptors) start with the first of these calls. Each throws
  // std::runtime_error when they cannot start, or the node is stopped.
  //
  // Lets the peers of `exported` reach [base, base + length), read-only or read-write,
  // until unregister_segment or the node stops; every other peer's request on it fails
  // as not_exported, and a write to a read-only one as read_only. A peer is named by
  // its transfer_identity(). For rdma this is also how local memory gets the memory
  // region a transfer needs.
  segment_descriptor register_segment(void* base, std::uint64_t length,
                                      segment_export exported);
  // The same, exported to no peer: only this node's own routes reach it.
  segment_descriptor register_segment(void* base, std::uint64_t length);
  // Withdraws it: requests on it fail as not_exported from now on. Returns once no lane
  // moves its bytes (a frame in flight ends or times out), so the memory may be freed
  // then. False for an id that is not registered.
  bool unregister_segment(std::uint64_t id);
  // This node's transfer identity, which a peer names in its segment_export to let
  // this node reach its memory: its actor system's CAF node id, as peers see it.
  std::string transfer_identity();
  // Where peers connect_peer() to this node: its transfer host, on transfer.listen's host
  // and transfer.control_port (the free port chosen when that is 0).
  std::uint16_t transfer_port();
  // Asks the peer's transfer host for its segment descriptors, by message, and opens a
  // route to it: tcp lanes, rdma queue pairs, or for `local` a copying lane (the peer
  // in this process). Asked again for the same host and port, it asks for the
  // descriptors again and returns the same route: segments the peer registered since
  // become reachable, for the handles of both calls.
  transfer_peer connect_peer(const std::string& host, std::uint16_t transfer_port);
  // Moves each request between this process's memory and the peer's segments; one
  // status per request (unknown_segment, out_of_bounds, ... by request). The memory
  // must stay valid until the future is ready; for rdma it must lie in a segment
  // registered on this node, or its slices fail as local_access.
  std::future<std::vector<transfer_status>> transfer(const transfer_peer& peer,
                                                     std::vector<transfer_request> requests);

private:
  void stop_services();

  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spillway
