// One process per data dir. Two nodes (or a node and `spillway put`) writing the same
// dir would hand out the same bucket ids; an flock on <data dir>/LOCK forbids it, and
// the kernel drops the lock when the holder dies, even by SIGKILL.
#pragma once

#include <filesystem>

#include "runtime/io/unique_fd.hpp"

namespace spillway {

class data_dir_lock {
public:
  // Creates the dir if needed and takes the lock; throws std::runtime_error naming the
  // dir, and the holder's pid when another process has it.
  explicit data_dir_lock(const std::filesystem::path& dir);
  data_dir_lock(const data_dir_lock&) = delete;
  data_dir_lock& operator=(const data_dir_lock&) = delete;

private:
  unique_fd fd_;
};

}  // namespace spillway
