// The disk's limit for a batch, shared by `bench read` and `bench e2e`: a bare
// io_uring loop reading what the node reads for one value (its record's aligned
// extent), at random offsets of a data dir's bucket files, at a given depth, O_DIRECT
// into huge pages as big as the batch. Built as part of the `spillway` command.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>

namespace spillway {

// GB/s of value bytes over `bytes` worth of such reads; throws std::runtime_error when
// a read fails or `dir` holds no bucket file to read.
double footprint_round(const std::filesystem::path& dir, std::uint64_t object_size,
                       std::uint64_t bytes, unsigned depth, std::mt19937_64& random);

}  // namespace spillway
