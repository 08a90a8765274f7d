// Reads one record with pread and checks it (lengths, crc, key, bucket) before its
// value is handed out. Used by `spillway inspect --verify` and by node::read_values.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/storage/key_status.hpp"
#include "runtime/storage/bucket_format.hpp"

namespace spillway {

// The read goes through a page-aligned buffer, so fd may be O_DIRECT. On success
// `value` holds the value; otherwise the status says why
// (corrupt, io_error) and `problem` says what exactly.
key_status read_record(int fd, std::uint64_t bucket_id,
                       const bucket_format::index_entry& want, std::string& value,
                       std::string& problem);

}  // namespace spillway
