// The catalog: which bucket holds each key, the bucket table, and eviction. It is
// the read path's first stop (resolve) and the writer's last (publish).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <caf/fwd.hpp>

#include "messages/store.hpp"
#include "runtime/storage/recovery.hpp"

namespace spillway {

struct catalog_options {
  std::filesystem::path data_dir;    // where the bucket files are: nothing else is unlinked
  std::uint64_t quota_bytes = 0;     // bucket files may take this much, resolved (> 0)
  std::uint64_t reserve_bytes = 0;   // kept free for the bucket being written
  bool lru = false;                  // evict the least recently read bucket, else the oldest
  bool refuse_o_direct = false;      // fault injection: buckets' O_DIRECT opens answer EINVAL
  std::uint64_t max_open_files = 4096;  // buckets holding a descriptor, past a batch's own
  // Evictions write forget-log entries (through the actor a forget message names) before
  // their files go; false: they go at once, nothing written (tests of the catalog alone).
  bool forget_log = false;
};

// Starts with the buckets recovery found; their keys are published in id order.
catalog_actor spawn_catalog(caf::actor_system& system, catalog_options options,
                            recovered_store recovered);

}  // namespace spillway
