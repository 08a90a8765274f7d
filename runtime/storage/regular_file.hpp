// Opening a file of the data dir so that nobody who can write the dir can aim the node
// elsewhere: the last component is never followed if it is a symlink (a LOCK pointing
// at /etc/passwd), and a FIFO or device swapped in under a bucket's name is refused
// instead of blocking the open or the reads.
#pragma once

#include <sys/types.h>

#include <filesystem>

namespace spillway {

// open(2) with O_NOFOLLOW and the check that the result is a regular file: returns the
// descriptor (the caller's flags, O_NONBLOCK never left on), or -1 with errno set as by
// open: ELOOP for a symlink, EBADFD for anything else that is not a regular file.
int open_regular_file(const std::filesystem::path& path, int flags, mode_t mode = 0);

}  // namespace spillway
