// Probes of what this kernel and process allow: a real io_uring setup, the locked-memory
// budget, the hugepage pools and an O_DIRECT round trip on a filesystem. They report
// plain facts (numbers and errno values) and no advice, because the reader actors and
// the arena choose their strategy from the same results the doctor explains to people.
#include "runtime/io/kernel_probe.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "runtime/io/unique_fd.hpp"

namespace spillway {

namespace {

namespace fs = std::filesystem;

// Ring memory counts against RLIMIT_MEMLOCK as well: a 4096-entry ring took 404 KiB of
// it here (STACK.md section 5), the readers' 32-entry rings far less.
constexpr std::uint64_t ring_memlock_reserve = 512ull << 10;

constexpr int cap_ipc_lock_bit = 14;
constexpr std::size_t direct_io_block = 4096;

// /proc and /sys files report a size of 0, so they are read as a stream to the end.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first word after "key:" in a "key: value" file such as /proc/meminfo.
std::optional<std::string> field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream rest(line.substr(key.size() + 1));
    std::string word;
    if (rest >> word) return word;
  }
  return std::nullopt;
}

std::uint64_t field_number(const std::string& text, const std::string& key, int base = 10) {
  const auto word = field(text, key);
  return word ? std::strtoull(word->c_str(), nullptr, base) : 0;
}

// A ring that lives only as long as the probe needs it.
class test_ring {
public:
  explicit test_ring(unsigned flags) {
    io_uring_params params{};
    params.flags = flags;
    error_ = -io_uring_queue_init_params(8, &ring_, &params);
  }
  ~test_ring() {
    if (error_ == 0) io_uring_queue_exit(&ring_);
  }
  test_ring(const test_ring&) = delete;
  test_ring& operator=(const test_ring&) = delete;
  int error() const { return error_; }

private:
  io_uring ring_{};
  int error_ = 0;
};

// The word in brackets: "always [madvise] never" -> "madvise".
std::string bracketed(const std::string& text) {
  const auto open = text.find('[');
  const auto close = text.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return text.substr(open + 1, close - open - 1);
}

std::string fs_type_name(unsigned long magic) {
  switch (magic) {
    case EXT4_SUPER_MAGIC: return "ext4";
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case F2FS_SUPER_MAGIC: return "f2fs";
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlay";
    case NFS_SUPER_MAGIC: return "nfs";
    case FUSE_SUPER_MAGIC: return "fuse";
    case CEPH_SUPER_MAGIC: return "ceph";
    case CIFS_SUPER_MAGIC: return "cifs";
    case SMB2_SUPER_MAGIC: return "smb2";
    case EXFAT_SUPER_MAGIC: return "exfat";
    case MSDOS_SUPER_MAGIC: return "vfat";
    default: break;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%lx", magic);
  return hex;
}

// The data dir may not exist before the node's first start; what matters is the
// filesystem it will be created on.
fs::path nearest_existing(const fs::path& dir) {
  std::error_code ec;
  fs::path path = fs::absolute(dir, ec).lexically_normal();
  while (!fs::exists(path, ec) && path.has_relative_path()) path = path.parent_path();
  return path;
}

// Leaves fs_type empty when statfs fails, so callers can tell "unknown" from "0 free".
void fill_statfs(direct_io_probe& probe) {
  struct statfs info {};
  if (::statfs(probe.probed_dir.c_str(), &info) != 0) return;
  const std::uint64_t unit = info.f_frsize ? info.f_frsize : info.f_bsize;
  probe.fs_type = fs_type_name(static_cast<unsigned long>(info.f_type));
  probe.free_bytes = info.f_bavail * unit;
  probe.total_bytes = info.f_blocks * unit;
}

// The probe's file, closed and unlinked however the probe ends. Unlinked even when the
// open failed: a filesystem may create the file before it refuses O_DIRECT.
class probe_file {
public:
  explicit probe_file(fs::path path)
      : path_(std::move(path)),
        fd_(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600)),
        open_errno_(fd_ ? 0 : errno) {}
  ~probe_file() {
    fd_.reset();  // first: NFS would only rename a still-open file to .nfsXXXX on unlink
    if (open_errno_ != EEXIST) ::unlink(path_.c_str());
  }
  probe_file(const probe_file&) = delete;
  probe_file& operator=(const probe_file&) = delete;
  int fd() const { return fd_.get(); }
  int open_errno() const { return open_errno_; }

private:
  fs::path path_;
  unique_fd fd_;
  int open_errno_;
};

// Unique per process and call, so concurrent probes of one directory do not collide.
fs::path probe_file_name(const fs::path& dir) {
  static std::atomic<unsigned> counter{0};
  return dir / (".spillway-direct-io." + std::to_string(::getpid()) + "." +
                std::to_string(counter++));
}

int transfer_errno(ssize_t done) {
  if (done < 0) return errno;
  return static_cast<std::size_t>(done) == direct_io_block ? 0 : EIO;
}

// Writes a pattern and reads it back; some filesystems accept the O_DIRECT open and
// only refuse (EINVAL) or mangle the I/O itself.
int aligned_round_trip(int fd) {
  std::unique_ptr<unsigned char, decltype(&std::free)> buffer(
      static_cast<unsigned char*>(std::aligned_alloc(direct_io_block, direct_io_block)),
      &std::free);
  if (!buffer) return ENOMEM;
  unsigned char* const data = buffer.get();
  std::memset(data, 0x5a, direct_io_block);
  if (const int err = transfer_errno(::pwrite(fd, data, direct_io_block, 0))) return err;
  std::memset(data, 0, direct_io_block);
  if (const int err = transfer_errno(::pread(fd, data, direct_io_block, 0))) return err;
  const bool intact = std::all_of(data, data + direct_io_block, [](unsigned char byte) {
    return byte == 0x5a;
  });
  return intact ? 0 : EIO;
}

}  // namespace

kernel_version running_kernel() {
  kernel_version version;
  utsname names{};
  if (::uname(&names) != 0) return version;
  version.release = names.release;
  std::sscanf(names.release, "%d.%d.%d", &version.major, &version.minor, &version.patch);
  return version;
}

uring_probe probe_uring() {
  uring_probe probe;
  if (const auto text = read_text("/proc/sys/kernel/io_uring_disabled"))
    probe.disabled_sysctl = std::atoi(text->c_str());
  probe.setup_errno = test_ring(0).error();
  probe.defer_taskrun_errno =
      test_ring(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN).error();
  return probe;
}

bool memlock_probe::can_register(std::uint64_t bytes) const {
  if (cap_ipc_lock || soft_limit == UINT64_MAX) return true;
  return soft_limit >= ring_memlock_reserve && bytes <= soft_limit - ring_memlock_reserve;
}

memlock_probe probe_memlock() {
  memlock_probe probe;
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0)
    probe.soft_limit = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur;
  if (const auto status = read_text("/proc/self/status")) {
    const std::uint64_t effective = field_number(*status, "CapEff", 16);
    probe.cap_ipc_lock = (effective >> cap_ipc_lock_bit) & 1;
  }
  return probe;
}

hugepage_probe probe_hugepages() {
  hugepage_probe probe;
  if (const auto meminfo = read_text("/proc/meminfo")) {
    probe.hugetlb_page_size = field_number(*meminfo, "Hugepagesize") << 10;  // in kB
    probe.hugetlb_free = field_number(*meminfo, "HugePages_Free");
    probe.hugetlb_total = field_number(*meminfo, "HugePages_Total");
  }
  if (const auto thp = read_text("/sys/kernel/mm/transparent_hugepage/enabled"))
    probe.thp_mode = bracketed(*thp);
  return probe;
}

direct_io_probe probe_direct_io(const std::filesystem::path& dir) {
  direct_io_probe probe;
  probe.probed_dir = nearest_existing(dir);
  fill_statfs(probe);
  const probe_file file(probe_file_name(probe.probed_dir));
  probe.open_errno = file.open_errno();
  if (probe.open_errno == 0) probe.io_errno = aligned_round_trip(file.fd());
  return probe;
}

}  // namespace spillway
