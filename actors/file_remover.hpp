// The file remover: unlinks the files of evicted buckets, on a thread of its own.
// Unlinking a multi-GiB file frees all its extents before it returns, which can take
// tens to hundreds of milliseconds on some filesystems: no scheduler thread, which
// every other actor shares, may wait for it.
#pragma once

#include <caf/fwd.hpp>

#include "messages/store.hpp"

namespace spillway {

// `own_thread` false: an ordinary actor on the scheduler, for deterministic tests.
file_remover_actor spawn_file_remover(caf::actor_system& system, bool own_thread = true);

}  // namespace spillway
