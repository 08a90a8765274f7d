// What the `fault` tests (fault_fs_*_test.cpp) share: a node whose data dir is inside
// the fault filesystem (faultfs_mount.hpp), keys whose values anyone can recompute, where
// a rule hits exactly one key's record, and the checks after each fault: every key its
// exact bytes or its named error, nothing leaked, a clean batch once the rules are gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tests/faultfs_mount.hpp"

namespace spillway::test {

// Records span many pages: a byte inside one is in no other key's read.
constexpr std::size_t fault_value_size = 256 << 10;

// Small: 8 keys a bucket, 2 readers, a 64 MiB arena; data dir "data" in the mount.
node_config config_on(const faultfs_mount& fs);

// Keys written through the node and flushed, each put acknowledged.
struct dataset {
  std::vector<std::string> keys;
  void write(node& n, std::size_t count, const std::string& prefix);
};

// The value of `key` in a dataset.
std::string value_of(const std::string& key);

// Every key but `failed` holds exactly its bytes; `failed` has status `want`, no bytes.
void check_read(node& n, const std::vector<std::string>& keys, const std::string& failed = "",
                key_status want = {});

// The same read by get_batch_into into page-aligned caller memory: every key but
// `failed` lands exactly, in place (the node's counter says so), nothing past its value.
void check_read_into(node& n, const std::vector<std::string>& keys,
                     const std::string& failed = "", key_status want = {});

// Where a rule hits one key's record and nothing else: its bucket file as the mount
// names it, and a byte in the middle of its value (found in the backing files' indexes).
struct record_spot {
  std::string path;
  std::uint64_t offset = 0;
  // `words` aimed at that byte: "op=read fault=eio" -> "... path=P offset=O-O+1".
  std::string rule(const std::string& words) const;
};
record_spot spot_of(const faultfs_mount& fs, const std::string& key);

// The backing data dir's files whose name ends with `suffix`.
std::size_t files_ending(const faultfs_mount& fs, const std::string& suffix);

// After a fault: nothing leaked, and with the rules gone the same batch is clean.
void check_recovered(node& n, faultfs_mount& fs, const std::vector<std::string>& keys);

}  // namespace spillway::test
