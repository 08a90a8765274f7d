// What a node reports about itself: plain structs, shared by the actors that answer
// `stats` and by the embedding API, so this header stays free of CAF.
// inspect() makes each one printable and serializable for CAF (STACK.md 2.2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spillway {

struct reader_stats {
  std::uint32_t index = 0;
  std::string engine;             // "io_uring" or "posix"
  std::uint32_t ring_flags = 0;   // IORING_SETUP_* the ring was created with
  std::uint64_t wakeups = 0;      // times the mailbox woke the ring
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reader_stats& x) {
  return f(x.index, x.engine, x.ring_flags, x.wakeups);
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
  std::uint64_t buckets = 0;
  std::uint64_t file_bytes = 0;      // bucket files on disk, all pages
  std::uint64_t garbage_bytes = 0;   // value bytes of records since overwritten or removed
  std::uint64_t quota_bytes = 0;     // storage.max_total_size, resolved
  std::uint64_t evicted_buckets = 0;
  std::uint64_t evicted_keys = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, catalog_stats& x) {
  return f(x.keys, x.live_bytes, x.buckets, x.file_bytes, x.garbage_bytes, x.quota_bytes,
           x.evicted_buckets, x.evicted_keys);
}

}  // namespace spillway
