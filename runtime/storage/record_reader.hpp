// Reads one whole record with pread, its head too in v2, and checks it (lengths, crc, key,
// bucket, padding) before its value is handed out. Used by `spillway inspect --verify`.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/storage/key_status.hpp"
#include "runtime/storage/bucket_format.hpp"

namespace spillway {

// The read goes through a page-aligned buffer, so fd may be O_DIRECT. On success
// `value` holds the value; otherwise the status says why
// (corrupt, io_error) and `problem` says what exactly.
key_status read_record(int fd, std::uint64_t bucket_id, std::uint32_t format_version,
                       const bucket_format::index_entry& want, std::string& value,
                       std::string& problem);

}  // namespace spillway
