#include "runtime/storage/forget_log_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "runtime/storage/crash_point.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

// 0, or the errno of writing all of `bytes` at `offset`.
int write_all(int fd, const std::string& bytes, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                            static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

forget_log_writer::forget_log_writer(std::filesystem::path dir, std::uint64_t end,
                                     mode_t file_mode)
    : dir_(std::move(dir)), path_(dir_ / forget_log_name), mode_(file_mode), end_(end) {}

void forget_log_writer::stage(const forget_entry& entry) {
  encode_forget_entry(entry, staged_bytes_);
  ++staged_count_;
}

// A log shorter than its header (none yet, or its creation torn) gets one, synced with
// its name before any entry can count on it.
std::optional<io_failure> forget_log_writer::open() {
  if (end_ == 0) end_ = read_forget_log(dir_).valid_end;  // not told: after its whole entries
  unique_fd fd{open_regular_file(path_, O_RDWR | O_CREAT | O_CLOEXEC, mode_)};
  if (!fd) return make_io_failure(errno, "open", path_);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return make_io_failure(errno, "stat", path_);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < forget_format::header_size || end_ < forget_format::header_size) {
    std::string header;
    encode_forget_header(header);
    if (::ftruncate(fd.get(), 0) != 0) return make_io_failure(errno, "truncate", path_);
    if (const int err = write_all(fd.get(), header, 0)) return make_io_failure(err, "write", path_);
    if (::fdatasync(fd.get()) != 0) return make_io_failure(errno, "fdatasync", path_);
    if (const int err = fsync_dir(dir_)) return make_io_failure(err, "fsync directory", dir_);
    end_ = header.size();
  } else if (size > end_ && ::ftruncate(fd.get(), static_cast<off_t>(end_)) != 0) {
    return make_io_failure(errno, "truncate", path_);  // a torn tail would precede new entries
  }
  fd_ = std::move(fd);
  return std::nullopt;
}

std::optional<io_failure> forget_log_writer::commit() {
  if (staged_count_ == 0) return std::nullopt;
  const auto bytes = std::exchange(staged_bytes_, {});
  const auto count = std::exchange(staged_count_, 0);
  if (!fd_)
    if (auto failed = open()) return failed;
  std::optional<io_failure> failed;
  if (const int err = write_all(fd_.get(), bytes, end_))
    failed = make_io_failure(err, "write", path_);
  reach(crash_point::forget_written);
  if (!failed && ::fdatasync(fd_.get()) != 0) failed = make_io_failure(errno, "fdatasync", path_);
  if (failed) {
    // Back to where it was; should even that fail, the next commit opens it afresh.
    if (::ftruncate(fd_.get(), static_cast<off_t>(end_)) != 0) fd_.reset();
    return failed;
  }
  reach(crash_point::forget_synced);
  end_ += bytes.size();
  written_ += count;
  return std::nullopt;
}

std::optional<io_failure> rewrite_forget_log(const std::filesystem::path& dir,
                                             std::span<const forget_entry> entries,
                                             mode_t file_mode) {
  const auto tmp = dir / forget_log_tmp_name;
  std::string bytes;
  encode_forget_header(bytes);
  for (const auto& e : entries) encode_forget_entry(e, bytes);
  ::unlink(tmp.c_str());  // a crash's leftover; never followed, never appended to
  const unique_fd fd{open_regular_file(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, file_mode)};
  if (!fd) return make_io_failure(errno, "create", tmp);
  std::optional<io_failure> failed;
  if (const int err = write_all(fd.get(), bytes, 0)) failed = make_io_failure(err, "write", tmp);
  else if (::fdatasync(fd.get()) != 0) failed = make_io_failure(errno, "fdatasync", tmp);
  if (failed) {
    ::unlink(tmp.c_str());
    return failed;
  }
  reach(crash_point::forget_compacted);
  const auto path = dir / forget_log_name;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    failed = make_io_failure(errno, "rename", tmp);
    ::unlink(tmp.c_str());
    return failed;
  }
  reach(crash_point::forget_renamed);
  if (const int err = fsync_dir(dir)) return make_io_failure(err, "fsync directory", dir);
  return std::nullopt;
}

}  // namespace spillway
