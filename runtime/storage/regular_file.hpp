// Opening a file of the data dir so that nobody who can write the dir can aim the node
// elsewhere: the last component is never followed if it is a symlink (a LOCK pointing
// at /etc/passwd), and a FIFO or device swapped in under a bucket's name is refused
// instead of blocking the open or the reads.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace spillway {

// open(2) with O_NOFOLLOW and the check that the result is a regular file: returns the
// descriptor (the caller's flags, O_NONBLOCK never left on), or -1 with errno set as by
// open: ELOOP for a symlink, EBADFD for anything else that is not a regular file.
int open_regular_file(const std::filesystem::path& path, int flags, mode_t mode = 0);

// 0, or the errno of opening or syncing the directory `dir`: what makes a name
// created, or renamed, in it durable.
int fsync_dir(const std::filesystem::path& dir);

// What open_regular_file's errno means, for messages.
std::string open_error_text(int err);

// The mode of a directory holding files of `file_mode`: whoever may read the files may
// also list and enter it (0600 -> 0700, 0640 -> 0750).
constexpr mode_t dir_mode_for(mode_t file_mode) { return file_mode | (file_mode & 0444) >> 2; }
static_assert(dir_mode_for(0600) == 0700 && dir_mode_for(0640) == 0750);

}  // namespace spillway
