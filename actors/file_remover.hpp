// The file remover: unlinks the files of evicted buckets, on a thread of its own.
// Unlinking a multi-GiB file frees all its extents before it returns, which can take
// tens to hundreds of milliseconds on some filesystems: no scheduler thread, which
// every other actor shares, may wait for it.
#pragma once

#include <filesystem>

#include <caf/fwd.hpp>

#include "messages/store.hpp"

namespace spillway {

// Unlinks only files directly in `dir` (the data dir): a path elsewhere is a bug, logged
// and refused. `own_thread` false: an ordinary actor on the scheduler, for
// deterministic tests.
file_remover_actor spawn_file_remover(caf::actor_system& system, std::filesystem::path dir,
                                      bool own_thread = true);

}  // namespace spillway
