// Why the high-level API with direct_io off. The page cache and O_DIRECT are the
// kernel's, decided per open by the flags and by fuse_file_info::direct_io, whatever
// API the daemon speaks; the high-level one names files by path, which is what rules
// match, and takes inode bookkeeping off our hands. direct_io stays off so a buffered
// open is cached as on a disk filesystem, and an O_DIRECT open bypasses that cache in
// the kernel (fuse's direct_IO), which sends us every read at the caller's offset and
// length: io_uring and preadv reads of the node's O_DIRECT fds reach `read` below, and
// what we answer is the completion the node sees. The backing file is opened without
// O_DIRECT: our buffers are not aligned, and the kernel already kept the caller's I/O
// off the cache; the flag is remembered, for rules with direct=1.
// hard_remove: an unlinked open file is gone from the directory at once (no
// .fuse_hidden files in the node's data dir); its handle keeps the backing fd.
#include "tools/faultfs/passthrough.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

namespace faultfs {
namespace {

struct handle {
  int fd = -1;
  bool direct = false;
  std::string path;  // as opened: a renamed file keeps matching rules by it
};

filesystem& fs() { return *static_cast<filesystem*>(fuse_get_context()->private_data); }
handle& handle_of(fuse_file_info* fi) { return *reinterpret_cast<handle*>(fi->fh); }

// The path relative to the backing directory ("/a/b" -> "a/b", "/" -> ".").
const char* rel(const char* path) { return path[1] == '\0' ? "." : path + 1; }

int result(int rc) { return rc < 0 ? -errno : rc; }

// Asks the rules; an error they pick is the answer, a delay is slept here.
verdict judge(op operation, const std::string& path, std::uint64_t offset, std::uint64_t size,
              bool direct) {
  const auto v = fs().rules->decide({operation, path, offset, size, direct});
  if (v.delay_ms != 0) std::this_thread::sleep_for(std::chrono::milliseconds{v.delay_ms});
  return v;
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return result(::fstat(handle_of(fi).fd, st));
  return result(::fstatat(fs().backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

// Directories are opened as files are: with nullpath_ok, readdir and fsyncdir may get no
// path, only the handle.
int fs_opendir(const char* path, fuse_file_info* fi) {
  const int fd = ::openat(fs().backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  fi->fh = reinterpret_cast<std::uint64_t>(new handle{fd, false, path});
  return 0;
}

int fs_readdir(const char*, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info* fi,
               fuse_readdir_flags) {
  const int fd = ::dup(handle_of(fi).fd);  // closedir closes the fd it reads
  if (fd < 0) return -errno;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) return ::close(fd), -ENOMEM;
  ::rewinddir(dir);
  while (const dirent* entry = ::readdir(dir)) {
    struct stat st{};
    st.st_ino = entry->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(entry->d_type));
    if (fill(buf, entry->d_name, &st, 0, fuse_fill_dir_flags{}) != 0) break;
  }
  ::closedir(dir);
  return 0;
}

int fs_mkdir(const char* path, mode_t mode) {
  return result(::mkdirat(fs().backing_fd, rel(path), mode));
}
int fs_unlink(const char* path) { return result(::unlinkat(fs().backing_fd, rel(path), 0)); }
int fs_rmdir(const char* path) {
  return result(::unlinkat(fs().backing_fd, rel(path), AT_REMOVEDIR));
}
int fs_rename(const char* from, const char* to, unsigned flags) {
  return result(::renameat2(fs().backing_fd, rel(from), fs().backing_fd, rel(to), flags));
}
int fs_readlink(const char* path, char* buf, std::size_t size) {
  const auto n = ::readlinkat(fs().backing_fd, rel(path), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}
int fs_symlink(const char* target, const char* path) {
  return result(::symlinkat(target, fs().backing_fd, rel(path)));
}
int fs_chmod(const char* path, mode_t mode, fuse_file_info* fi) {
  if (fi != nullptr) return result(::fchmod(handle_of(fi).fd, mode));
  return result(::fchmodat(fs().backing_fd, rel(path), mode, 0));
}
int fs_truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (fi != nullptr) return result(::ftruncate(handle_of(fi).fd, size));
  const int fd = ::openat(fs().backing_fd, rel(path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int rc = result(::ftruncate(fd, size));
  ::close(fd);
  return rc;
}
int fs_utimens(const char* path, const timespec times[2], fuse_file_info* fi) {
  if (fi != nullptr) return result(::futimens(handle_of(fi).fd, times));
  return result(::utimensat(fs().backing_fd, rel(path), times, AT_SYMLINK_NOFOLLOW));
}
int fs_statfs(const char*, struct statvfs* st) { return result(::fstatvfs(fs().backing_fd, st)); }

int open_backing(const char* path, int flags, mode_t mode, fuse_file_info* fi) {
  const bool direct = (flags & O_DIRECT) != 0;
  if (const auto v = judge(op::open, path, 0, 0, direct); v.error != 0) return v.error;
  const int fd = ::openat(fs().backing_fd, rel(path), (flags & ~O_DIRECT) | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  fi->fh = reinterpret_cast<std::uint64_t>(new handle{fd, direct, path});
  return 0;
}
int fs_open(const char* path, fuse_file_info* fi) { return open_backing(path, fi->flags, 0, fi); }
int fs_create(const char* path, mode_t mode, fuse_file_info* fi) {
  return open_backing(path, fi->flags | O_CREAT, mode, fi);
}

int fs_release(const char*, fuse_file_info* fi) {
  auto* h = &handle_of(fi);
  ::close(h->fd);
  delete h;
  return 0;
}

// A short read keeps the first half of what was asked, whole pages where it can, so
// the caller's read of the rest stays aligned as O_DIRECT wants.
std::size_t short_length(std::size_t size) {
  const std::size_t pages = (size / 2) & ~std::size_t{4095};
  return pages != 0 ? pages : size / 2;
}

int fs_read(const char*, char* buf, std::size_t size, off_t offset, fuse_file_info* fi) {
  const auto& h = handle_of(fi);
  const auto v = judge(op::read, h.path, static_cast<std::uint64_t>(offset), size, h.direct);
  if (v.error != 0) return v.error;
  const std::size_t want = v.short_read ? short_length(size) : size;
  std::size_t done = 0;
  while (done < want) {  // the backing file's own short reads are not ours to pass on
    const auto n = ::pread(h.fd, buf + done, want - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<int>(done);
}

int fs_write(const char*, const char* buf, std::size_t size, off_t offset, fuse_file_info* fi) {
  const auto& h = handle_of(fi);
  const auto v = judge(op::write, h.path, static_cast<std::uint64_t>(offset), size, h.direct);
  if (v.error != 0) return v.error;
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::pwrite(h.fd, buf + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<int>(done);
}

int fs_fsync(const char*, int datasync, fuse_file_info* fi) {
  const auto& h = handle_of(fi);
  const auto v = judge(datasync ? op::fdatasync : op::fsync, h.path, 0, 0, h.direct);
  if (v.error != 0) return v.error;
  return result(datasync ? ::fdatasync(h.fd) : ::fsync(h.fd));
}

int fs_fsyncdir(const char*, int, fuse_file_info* fi) {
  const auto& h = handle_of(fi);
  if (const auto v = judge(op::fsyncdir, h.path, 0, 0, false); v.error != 0) return v.error;
  return result(::fsync(h.fd));
}

void* fs_init(fuse_conn_info*, fuse_config* cfg) {
  cfg->use_ino = 1;
  cfg->nullpath_ok = 1;
  cfg->hard_remove = 1;
  cfg->direct_io = 0;
  cfg->kernel_cache = 0;
  return fuse_get_context()->private_data;
}

}  // namespace

fuse_operations passthrough_operations() {
  fuse_operations ops{};
  ops.init = fs_init;
  ops.getattr = fs_getattr;
  ops.opendir = fs_opendir;
  ops.readdir = fs_readdir;
  ops.releasedir = fs_release;
  ops.mkdir = fs_mkdir;
  ops.unlink = fs_unlink;
  ops.rmdir = fs_rmdir;
  ops.rename = fs_rename;
  ops.readlink = fs_readlink;
  ops.symlink = fs_symlink;
  ops.chmod = fs_chmod;
  ops.truncate = fs_truncate;
  ops.utimens = fs_utimens;
  ops.statfs = fs_statfs;
  ops.open = fs_open;
  ops.create = fs_create;
  ops.release = fs_release;
  ops.read = fs_read;
  ops.write = fs_write;
  ops.fsync = fs_fsync;
  ops.fsyncdir = fs_fsyncdir;
  return ops;
}

}  // namespace faultfs
