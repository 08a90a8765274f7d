#include "runtime/storage/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spillway {

int open_regular_file(const std::filesystem::path& path, int flags, mode_t mode) {
  // O_NONBLOCK so that opening a FIFO returns at once; the file type is then checked on
  // the descriptor itself, so nothing can be swapped in between the check and the use.
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK, mode);
  if (fd < 0) return -1;
  struct stat st{};
  int err = 0;
  if (::fstat(fd, &st) != 0) err = errno;
  else if (!S_ISREG(st.st_mode)) err = EBADFD;
  else if ((flags & O_NONBLOCK) == 0 &&
           ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    err = errno;
  if (err == 0) return fd;
  ::close(fd);
  errno = err;
  return -1;
}

int fsync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  return err;
}

std::string open_error_text(int err) {
  if (err == ELOOP) return "a symlink, which is not followed";
  if (err == EBADFD) return "not a regular file";
  return std::strerror(err);
}

}  // namespace spillway
