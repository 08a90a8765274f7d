// A bucket actor per bucket file, sealed or still being written (from its committed
// records, in the .tmp, until the seal renames it): it holds the file open for reads, counts the
// reads in flight (pin/unpin), and has the file deleted (by `remover`) once the
// catalog has evicted it and the last pin is gone: a message, never a wait.
#pragma once

#include <cstdint>
#include <filesystem>

#include <caf/fwd.hpp>

#include "messages/store.hpp"

namespace spillway {

// `buffered`: read the file through the page cache from the start (O_DIRECT was
// refused on its filesystem). `refuse_o_direct` (fault injection): the O_DIRECT open
// answers EINVAL, as such a filesystem's would.
// A bucket whose O_DIRECT open is refused tells `catalog` (buffered).
bucket_actor spawn_bucket(caf::actor_system& system, const catalog_actor& catalog,
                          const file_remover_actor& remover, std::uint64_t id,
                          std::filesystem::path path, bool buffered, bool refuse_o_direct = false);

}  // namespace spillway
