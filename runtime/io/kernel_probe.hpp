// What this kernel and process allow, probed once: io_uring, locked memory, hugepages,
// O_DIRECT. The doctor reports these; the readers and the arena choose by them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace spillway {

struct kernel_version {
  int major = 0, minor = 0, patch = 0;
  std::string release;  // uname -r, as printed
};
kernel_version running_kernel();

struct uring_probe {
  int disabled_sysctl = -1;       // /proc/sys/kernel/io_uring_disabled; -1 = absent
  int setup_errno = 0;            // 0 = a plain ring could be set up
  int defer_taskrun_errno = 0;    // 0 = SINGLE_ISSUER|DEFER_TASKRUN accepted
  bool usable() const { return setup_errno == 0; }
  bool defer_taskrun() const { return usable() && defer_taskrun_errno == 0; }
};
uring_probe probe_uring();

struct memlock_probe {
  std::uint64_t soft_limit = 0;   // RLIMIT_MEMLOCK, bytes; UINT64_MAX = unlimited
  bool cap_ipc_lock = false;      // in the effective set: the limit does not apply
  // Whether `bytes` of buffers can be registered with io_uring by this process.
  bool can_register(std::uint64_t bytes) const;
};
memlock_probe probe_memlock();

struct hugepage_probe {
  std::uint64_t hugetlb_page_size = 0;  // default hugetlb page size, bytes
  std::uint64_t hugetlb_free = 0;       // free pages in the default pool
  std::uint64_t hugetlb_total = 0;
  std::string thp_mode;                 // always | madvise | never | "" when absent
  std::uint64_t hugetlb_free_bytes() const { return hugetlb_page_size * hugetlb_free; }
};
hugepage_probe probe_hugepages();

struct direct_io_probe {
  std::filesystem::path probed_dir;     // the data dir, or its nearest existing parent
  std::string fs_type;                  // ext4, xfs, tmpfs, overlay, ... from statfs
  int open_errno = 0;                   // 0 = O_DIRECT open accepted
  int io_errno = 0;                     // 0 = an aligned O_DIRECT write and read worked
  std::uint64_t free_bytes = 0;         // available to this user on that filesystem
  std::uint64_t total_bytes = 0;
  bool direct_ok() const { return open_errno == 0 && io_errno == 0; }
};
// Creates, writes, reads and removes one 4 KiB file in `dir` (or its nearest
// existing parent when `dir` does not exist yet).
direct_io_probe probe_direct_io(const std::filesystem::path& dir);

}  // namespace spillway
