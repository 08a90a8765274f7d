#include "runtime/storage/data_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace spillway {
namespace {

std::string holder_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? std::string{text, static_cast<std::size_t>(n)} : "unknown";
}

}  // namespace

data_dir_lock::data_dir_lock(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create: " + ec.message());
  const auto path = dir / "LOCK";
  fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd_) throw std::runtime_error(path.string() + ": " + std::strerror(errno));
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
