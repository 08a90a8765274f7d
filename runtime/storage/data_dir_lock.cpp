#include "runtime/storage/data_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

std::string holder_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? std::string{text, static_cast<std::size_t>(n)} : "unknown";
}

// The dir itself gets `mode`; an existing one keeps its own.
void create_dir(const std::filesystem::path& dir, mode_t mode) {
  std::error_code ec;
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
  if (!ec && ::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    ec = {errno, std::system_category()};
  if (ec) throw std::runtime_error(dir.string() + ": cannot create: " + ec.message());
}

}  // namespace

data_dir_lock::data_dir_lock(const std::filesystem::path& dir, mode_t file_mode) {
  create_dir(dir, dir_mode_for(file_mode));
  const auto path = dir / "LOCK";
  fd_.reset(open_regular_file(path, O_RDWR | O_CREAT | O_CLOEXEC, file_mode));
  if (!fd_) throw std::runtime_error(path.string() + ": " + open_error_text(errno));
  struct stat st{};
  if (::fstat(fd_.get(), &st) != 0)
    throw std::runtime_error(path.string() + ": " + std::strerror(errno));
  if (st.st_nlink != 1)
    throw std::runtime_error(path.string() + " has " + std::to_string(st.st_nlink) +
                             " hard links, so it is another file too: remove it");
  if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = holder_pid(fd_.get());
    if (err == EWOULDBLOCK)
      throw std::runtime_error(dir.string() + " is in use by another spillway process (pid " +
                               pid + ")");
    throw std::runtime_error(path.string() + ": flock: " + std::strerror(err));
  }
  // The pid only makes the next process's message better; failing to write it is harmless.
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_.get(), 0) == 0 && ::pwrite(fd_.get(), pid.data(), pid.size(), 0) < 0)
    return;
}

}  // namespace spillway
