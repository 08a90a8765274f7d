// Recovery's use of the forget log (forget_log.hpp): read it, drop every record an entry
// kills from the buckets found, count the bucket ids it names (an id is never handed out
// twice, and a new bucket's records must lie past every bound), and, at a node's start,
// compact it to the entries still needed.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "runtime/storage/recovery.hpp"

namespace spillway {

// `store` holds every bucket recovery will serve, and the files it left unread. With
// `compact`, the log is rewritten when entries, damage or a torn tail can go (a failed
// rewrite is logged and leaves the old log to append to). Throws forget_log_unreadable.
void apply_forget_log(const std::filesystem::path& dir, recovered_store& store, bool compact,
                      mode_t file_mode);

}  // namespace spillway
