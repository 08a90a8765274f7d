// A bucket actor per sealed bucket file: it holds the file open for reads, counts the
// reads in flight (pin/unpin), and deletes the file once the catalog has evicted it
// and the last pin is gone: a message, never a wait.
#pragma once

#include <cstdint>
#include <filesystem>

#include <caf/fwd.hpp>

#include "messages/store.hpp"

namespace spillway {

// `refuse_o_direct`: fault injection, act as if the filesystem refused O_DIRECT.
bucket_actor spawn_bucket(caf::actor_system& system, std::uint64_t id,
                          std::filesystem::path path, bool refuse_o_direct);

}  // namespace spillway
