// One process per data dir. Two nodes (or a node and `spillway put`) writing the same
// dir would hand out the same bucket ids; an flock on <data dir>/LOCK forbids it, and
// the kernel drops the lock when the holder dies, even by SIGKILL.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "runtime/io/unique_fd.hpp"

namespace spillway {

class data_dir_lock {
public:
  // Creates the dir if needed (dir_mode_for(file_mode); its parents as the umask says)
  // and takes the lock on LOCK (file_mode), which must be a regular file of one link:
  // it is truncated, so a symlink or a hard link there would aim that at another file.
  // Throws std::runtime_error naming the dir or LOCK, and the holder's pid when another
  // process has it.
  data_dir_lock(const std::filesystem::path& dir, mode_t file_mode);
  data_dir_lock(const data_dir_lock&) = delete;
  data_dir_lock& operator=(const data_dir_lock&) = delete;

private:
  unique_fd fd_;
};

}  // namespace spillway
