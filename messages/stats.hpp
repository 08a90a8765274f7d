// What a node reports about itself: plain structs, shared by the actors that answer
// `stats` and by the embedding API, so this header stays free of CAF.
// inspect() makes each one printable and serializable for CAF (STACK.md 2.2).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/net/slice.hpp"
#include "runtime/storage/key_status.hpp"

namespace spillway {

struct reader_stats {
  std::uint32_t index = 0;
  std::string engine;                  // "io_uring" or "posix"
  std::uint32_t ring_flags = 0;        // IORING_SETUP_* the ring was created with
  std::uint64_t wakeups = 0;           // times the mailbox woke the ring
  std::uint64_t registered_buffers = 0; // read_fixed targets: arena chunks, caller memory pieces
  std::int32_t registration_errno = 0; // why registration failed; 0 = it did not
  std::uint64_t reads_fixed = 0;
  std::uint64_t reads_plain = 0;
  std::uint64_t ring_resets = 0;       // ring-level failures recovered from
  std::uint64_t short_reads = 0;       // reads that came back short and went again
  std::int32_t ring_errno = 0;         // why the ring was given up for pread; 0 = it was not
  // Window occupancy: time with at least one read in flight, and the integral of reads
  // in flight over time; in_flight_ns / busy_ns is the mean window while busy.
  std::uint64_t busy_ns = 0;
  std::uint64_t in_flight_ns = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reader_stats& x) {
  return f(x.index, x.engine, x.ring_flags, x.wakeups, x.registered_buffers,
           x.registration_errno, x.reads_fixed, x.reads_plain, x.ring_resets, x.short_reads,
           x.ring_errno, x.busy_ns, x.in_flight_ns);
}

struct node_stats {
  std::vector<reader_stats> readers;
  std::uint64_t reader_restarts = 0;  // readers the supervisor replaced after they died
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_stats& x) {
  return f(x.readers, x.reader_restarts);
}

struct catalog_stats {
  std::uint64_t keys = 0;
  std::uint64_t live_bytes = 0;      // value bytes of the keys
  std::uint64_t buckets = 0;         // sealed
  std::uint64_t open_buckets = 0;    // being written, their committed records served from .tmp
  std::uint64_t commits = 0;         // groups of puts made durable and published before a seal
  std::uint64_t file_bytes = 0;      // bucket files on disk, all pages (an open one's committed)
  std::uint64_t garbage_bytes = 0;   // value bytes of records since overwritten or removed
  std::uint64_t quota_bytes = 0;     // storage.max_total_size, resolved
  std::uint64_t evicted_buckets = 0;
  std::uint64_t evicted_keys = 0;
  bool reads_buffered = false;       // O_DIRECT was refused: reads go through the page cache
  std::uint64_t o_direct_refusals = 0;  // told by a bucket (its open) or a batch (a read)
  std::uint64_t open_files = 0;      // buckets holding a descriptor (storage.max_open_files)
  // The forget log (runtime/storage/forget_log.hpp): entries made durable since start
  // (one per key removed, one per key evicted), and records recovery dropped at start
  // because an entry said they were dead.
  std::uint64_t forget_entries_written = 0;
  std::uint64_t forget_records_dropped = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, catalog_stats& x) {
  return f(x.keys, x.live_bytes, x.buckets, x.open_buckets, x.commits, x.file_bytes,
           x.garbage_bytes, x.quota_bytes,
           x.evicted_buckets, x.evicted_keys, x.reads_buffered, x.o_direct_refusals,
           x.open_files, x.forget_entries_written, x.forget_records_dropped);
}

struct arena_stats {
  std::uint64_t size = 0;
  std::uint64_t ready_bytes = 0;   // populated and allocatable
  std::uint64_t free_bytes = 0;
  std::uint64_t leases = 0;        // outstanding
  std::uint64_t waiting = 0;       // allocs waiting for space
  std::uint64_t expired = 0;       // leases reclaimed by expiry (holders in other processes)
  std::uint64_t abandoned = 0;     // leases reclaimed because their holder went away
  std::uint64_t huge_bytes = 0;    // backed by huge pages
  std::string pages;               // hugetlb | thp | plain
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, arena_stats& x) {
  return f(x.size, x.ready_bytes, x.free_bytes, x.leases, x.waiting, x.expired, x.abandoned,
           x.huge_bytes, x.pages);
}

// Latencies counted by upper bound, as a Prometheus histogram reads them: bucket i
// holds what took at most latency_bounds_s[i] (and more than the bound before); the
// last holds the rest.
inline constexpr std::array<double, 12> latency_bounds_s{
  0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0};

struct latency_histogram {
  std::vector<std::uint64_t> counts = std::vector<std::uint64_t>(latency_bounds_s.size() + 1);
  std::uint64_t sum_ns = 0;

  void add(std::uint64_t ns) {
    std::size_t i = 0;
    while (i < latency_bounds_s.size() && static_cast<double>(ns) > latency_bounds_s[i] * 1e9) ++i;
    ++counts[i];
    sum_ns += ns;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latency_histogram& x) {
  return f(x.counts, x.sum_ns);
}

// One batch get or one put, as the actor that answered it reports it to the meter.
struct io_report {
  bool write = false;
  std::vector<std::uint32_t> keys;  // by key_error
  std::uint64_t bytes = 0;          // of the values handed out (get) or stored (put)
  std::uint64_t ns = 0;             // from the request to its answer
  // Value bytes that went between disk and the caller's memory directly, and those
  // memcpy'd on the way (into staging for a put, out of the arena for a get); for a get
  // also those read into the arena first (whole pages) for a caller that copies them out.
  std::uint64_t in_place_bytes = 0;
  std::uint64_t copied_bytes = 0;
  std::uint64_t bounced_bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, io_report& x) {
  return f(x.write, x.keys, x.bytes, x.ns, x.in_place_bytes, x.copied_bytes, x.bounced_bytes);
}

// What the node did since it started, summed by the meter (actors/meter.cpp).
struct io_stats {
  std::vector<std::uint64_t> read_keys = std::vector<std::uint64_t>(key_error_count);
  std::uint64_t read_bytes = 0;
  std::uint64_t read_in_place_bytes = 0;  // see io_report
  std::uint64_t read_bounced_bytes = 0;
  std::uint64_t read_copied_bytes = 0;
  latency_histogram get_latency;
  std::vector<std::uint64_t> written_keys = std::vector<std::uint64_t>(key_error_count);
  std::uint64_t written_bytes = 0;
  latency_histogram put_latency;
  std::uint64_t written_in_place_bytes = 0;  // value bytes put straight from caller memory
  std::uint64_t written_copied_bytes = 0;    // value bytes put through a staging copy
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, io_stats& x) {
  return f(x.read_keys, x.read_bytes, x.read_in_place_bytes, x.read_bounced_bytes,
           x.read_copied_bytes, x.get_latency, x.written_keys, x.written_bytes, x.put_latency,
           x.written_in_place_bytes, x.written_copied_bytes);
}

// What this node's transfers did since it started: each slicer's own account, summed
// by the engine, and the refusals of the tcp server peers reach it by.
struct transfer_stats {
  std::uint64_t bytes_written = 0;  // moved to peers (op write), by slices that succeeded
  std::uint64_t bytes_read = 0;     // moved from peers (op read)
  std::uint64_t slices = 0;         // cut from requests that passed the checks
  std::uint64_t slices_retried = 0; // sent again after a lane failed them
  std::vector<std::uint64_t> requests = std::vector<std::uint64_t>(transfer_error_count);
  // Each time a lane gave a slice back failed, by transfer_error: retried or not.
  std::vector<std::uint64_t> slice_failures = std::vector<std::uint64_t>(transfer_error_count);
  std::uint64_t lanes_lost = 0;        // lane actors that died or answered a post with an error
  std::uint64_t refused_frames = 0;    // server: connections closed on a frame it refused
  std::uint64_t accept_failures = 0;   // server: accepts failed for want of descriptors
  std::uint64_t dropped_lanes = 0;     // server: connections dropped by [fault] on purpose
  std::uint64_t refused_lanes = 0;     // server: lanes without a valid hello ticket
  std::uint64_t capped_lanes = 0;      // server: lanes over transfer.max_lanes(_per_peer)
  std::uint64_t timed_out_lanes = 0;   // server: lanes idle or mid-frame past their timeout
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_stats& x) {
  return f(x.bytes_written, x.bytes_read, x.slices, x.slices_retried, x.requests,
           x.slice_failures, x.lanes_lost, x.refused_frames, x.accept_failures,
           x.dropped_lanes, x.refused_lanes, x.capped_lanes, x.timed_out_lanes);
}

// Everything a node says about itself at once: what `spillway stats --node` and a
// remote client's stats() get, and what /metrics renders (runtime/metrics.hpp).
struct node_report {
  node_stats node;       // the supervisor: readers
  catalog_stats store;   // the catalog: keys, buckets, eviction
  arena_stats arena;     // the arena: memory and leases
  io_stats io;           // the meter: what the batches and the writer did
  transfer_stats transfer;  // the slicers, and the tcp server's refusals
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_report& x) {
  return f(x.node, x.store, x.arena, x.io, x.transfer);
}

}  // namespace spillway
