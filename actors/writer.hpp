// The writer: fills the open bucket file with the records of puts, commits them in
// groups (written, fdatasynced, published as part of the open bucket) and answers each
// put once its keys are committed, and seals the bucket at storage.bucket_size_limit or
// bucket_keys_limit, on flush, after seal_after_ms, and at shutdown. It also owns the
// forget log (runtime/storage/forget_log.hpp): removes, and the catalog's evictions,
// append to it and share the group commit's turn (one fdatasync of the log for all of
// them). It does blocking I/O (io_uring waits, fdatasync), so it runs detached, on its
// own thread.
#pragma once

#include <cstdint>
#include <filesystem>

#include <caf/fwd.hpp>

#include "messages/meter.hpp"
#include "messages/store.hpp"

namespace spillway {

struct writer_options {
  std::filesystem::path dir;
  std::uint64_t node_id = 1;
  std::uint64_t bucket_size_limit = 256ull << 20;
  std::uint64_t bucket_keys_limit = 500;
  std::uint64_t seal_after_ms = 0;    // 0: seal only on limits, flush and shutdown
  std::uint64_t first_sequence = 1;   // of the bucket ids this writer hands out
  bool use_uring = true;
  bool refuse_o_direct = false;       // fault injection
  unsigned file_mode = 0600;          // of the bucket files and the forget log
  std::uint64_t forget_log_end = 0;   // where the forget log's whole entries end (recovery)
};

// `meter` hears of every put once it is answered. `own_thread` false: an ordinary
// actor on the scheduler, for deterministic tests.
writer_actor spawn_writer(caf::actor_system& system, writer_options options,
                          catalog_actor catalog, meter_actor meter, bool own_thread = true);

}  // namespace spillway
