// The local transport's copy. Its bytes are bound for memory this core will not read
// again (a peer's segment, or a caller's buffer filled for its owner), in batches far
// larger than the cache, so the stores go around the cache (non-temporal). glibc's
// memcpy does the same by itself, but only for one copy longer than its threshold
// (3/4 of the shared cache: 114 MiB on the bench machine); per 64 KiB slice it takes
// `rep movsb`, which reads every destination line before writing it and evicts the
// cache as it goes, so a batch moved slice by slice ran at 0.6-0.75 of one memcpy of
// the same bytes (perf: the baseline in glibc's non-temporal loop, ours in rep movsb).
#pragma once

#include <cstddef>

namespace spillway {

// memcpy's contract (no overlap). The bytes are visible to other threads once it
// returns: it ends with a store fence.
void stream_copy(std::byte* to, const std::byte* from, std::size_t length);

}  // namespace spillway
