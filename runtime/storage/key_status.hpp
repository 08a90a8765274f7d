// What happened to one key of a batch. Every batch answers with one status per key,
// so one bad key never fails the others. Plain data: the embedding API shares it.
#pragma once

#include <cstdint>
#include <string>

namespace spillway {

enum class key_error : std::uint8_t {
  none,          // ok
  not_found,     // no such key (never written, removed, or evicted)
  corrupt,       // the bytes on disk fail their length or crc check: never returned
  io_error,      // the system call failed; sys_errno says how
  too_large,     // key over 4 KiB, value over 4 GiB, or over what the arena can hold
  bad_key,       // an empty key
  no_space,      // the data dir's filesystem is full (ENOSPC)
  timeout,       // not done within its deadline
  unavailable,   // the actor that had the key's work is gone (node shutting down)
  bad_range,     // a value to put from the caller's memory lies outside what it registered
};
constexpr std::size_t key_error_count = static_cast<std::size_t>(key_error::bad_range) + 1;

struct key_status {
  key_error error = key_error::none;
  std::int32_t sys_errno = 0;  // io_error, no_space: the errno

  bool ok() const { return error == key_error::none; }
  bool operator==(const key_status&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, key_status& x) {
  return f(x.error, x.sys_errno);
}

// "ok", "not_found", "io_error(EIO)", ...
std::string to_string(const key_status& status);

// "ok", "not_found", ...: the name alone, as metrics label it.
const char* name_of(key_error error);

}  // namespace spillway
