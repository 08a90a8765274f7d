// `spillway doctor`'s engine: runs the kernel and RDMA probes against the node's
// configuration and turns each result into one ok/warn/fail line saying what was found
// and, unless it is ok, what the operator should change. All the wording lives here; the
// probes report bare facts because the readers and the arena act on the same results.
// A warn is a slower or degraded path that still works; a fail is a node that cannot run.
#include "runtime/doctor.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>

#include "runtime/block_settings.hpp"
#include "runtime/io/arena_memory.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "runtime/rdma/rdma_selection.hpp"

namespace spillway {

namespace {

namespace fs = std::filesystem;
using enum doctor_level;

// glibc 2.32+ names errno values itself; an unknown value still gets a number.
std::string errno_name(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "errno " + std::to_string(err);
}

// "EPERM (Operation not permitted)".
std::string errno_text(int err) {
  return errno_name(err) + " (" + std::strerror(err) + ")";
}

// "1 GiB", "8 MiB", "77.9 GiB": one decimal, dropped when it would read ".0".
std::string human_size(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t unit = 0;
  double value = static_cast<double>(bytes);
  for (; value >= 1024 && unit + 1 < std::size(units); ++unit) value /= 1024;
  char text[32];
  const double tenths = std::round(value * 10) / 10;
  const char* format = tenths == std::floor(tenths) ? "%.0f %s" : "%.1f %s";
  std::snprintf(text, sizeof text, format, tenths, units[unit]);
  return text;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : ", ") + word;
  return text;
}

bool at_least(const kernel_version& kernel, int major, int minor) {
  return kernel.major > major || (kernel.major == major && kernel.minor >= minor);
}

doctor_line check_kernel(const kernel_version& kernel) {
  if (at_least(kernel, 6, 12))
    return {"kernel", ok,
            kernel.release + ": buffer-table clone (6.12+) and DEFER_TASKRUN (6.1+) available"};
  if (at_least(kernel, 6, 1))
    return {"kernel", warn,
            kernel.release + ": no buffer-table clone (6.12+): each reader ring registers "
                             "the arena itself, so starts are slower; upgrade to 6.12+"};
  return {"kernel", warn,
          kernel.release + ": no DEFER_TASKRUN (6.1+) and no buffer-table clone (6.12+): "
                           "readers use plain rings and register the arena once each; "
                           "upgrade to 6.12+"};
}

std::string sysctl_text(const uring_probe& probe) {
  if (probe.disabled_sysctl < 0) return "no kernel.io_uring_disabled";
  return "kernel.io_uring_disabled=" + std::to_string(probe.disabled_sysctl);
}

// What makes io_uring_setup fail with this errno, in terms an operator can act on.
std::string setup_cause(const uring_probe& probe) {
  switch (probe.setup_errno) {
    case ENOSYS: return "kernel built without CONFIG_IO_URING, or a seccomp filter";
    case EPERM:
      if (probe.disabled_sysctl > 0) return sysctl_text(probe) + " or a seccomp filter";
      return "a seccomp filter or an LSM policy (" + sysctl_text(probe) + ")";
    default: return sysctl_text(probe);
  }
}

doctor_line check_io_uring(const uring_probe& probe) {
  if (probe.usable()) return {"io_uring", ok, "a test ring was set up, " + sysctl_text(probe)};
  return {"io_uring", warn,
          "io_uring_setup: " + errno_text(probe.setup_errno) + ": " + setup_cause(probe) +
              "; reads will fall back to preadv"};
}

doctor_line check_defer_taskrun(const uring_probe& probe) {
  const std::string flags = "IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN";
  if (probe.defer_taskrun()) return {"taskrun", ok, flags + " accepted"};
  if (!probe.usable()) return {"taskrun", warn, flags + " not available: io_uring is unusable"};
  return {"taskrun", warn,
          flags + ": " + errno_text(probe.defer_taskrun_errno) +
              ": readers use rings whose completions interrupt them; use kernel 6.1+"};
}

std::string limit_text(const memlock_probe& probe) {
  return probe.soft_limit == UINT64_MAX ? "unlimited" : human_size(probe.soft_limit);
}

doctor_line check_memlock(const memlock_probe& probe, std::uint64_t arena) {
  const std::string limit = "RLIMIT_MEMLOCK " + limit_text(probe);
  const std::string what = "the " + human_size(arena) + " arena";
  if (probe.cap_ipc_lock)
    return {"memlock", ok, "CAP_IPC_LOCK: registering " + what + " skips " + limit};
  if (probe.can_register(arena))
    return {"memlock", ok, limit + " covers " + what + " and the rings"};
  return {"memlock", warn,
          "registration of " + what + " will fail with ENOMEM (" + limit +
              ", no CAP_IPC_LOCK): readers use plain reads; raise LimitMEMLOCK= or grant "
              "CAP_IPC_LOCK"};
}

// With read.engine = posix nothing touches io_uring, so its shortcomings are only facts.
doctor_line unless_posix(doctor_line line, const node_config& config) {
  if (config.read.engine != "posix" || line.level != warn) return line;
  line.level = ok;
  line.detail += " (not used: read.engine = posix)";
  return line;
}

// nr_hugepages sets the whole pool, and pages others hold stay held: the arena's pages
// come on top of those.
std::string pool_command(const hugepage_probe& probe, std::uint64_t arena) {
  const std::uint64_t pages = (arena + probe.hugetlb_page_size - 1) / probe.hugetlb_page_size;
  const std::uint64_t held = probe.hugetlb_total - probe.hugetlb_free;
  return "echo " + std::to_string(held + pages) + " > /proc/sys/vm/nr_hugepages";
}

doctor_line check_hugepages(const hugepage_probe& probe, std::uint64_t arena) {
  const std::string what = "the " + human_size(arena) + " arena";
  if (probe.hugetlb_page_size == 0)
    return {"hugepages", warn, "no hugetlb support: plain 4 KiB pages unless THP backs " + what};
  const std::string pool = "hugetlb pool has " + std::to_string(probe.hugetlb_free) + " of " +
                           std::to_string(probe.hugetlb_total) + " pages of " +
                           human_size(probe.hugetlb_page_size) + " free";
  if (probe.hugetlb_free_bytes() >= arena) return {"hugepages", ok, pool + ", enough for " + what};
  const std::string fix = pool_command(probe, arena);
  if (probe.thp_mode == "always" || probe.thp_mode == "madvise")
    return {"hugepages", warn,
            pool + ": only THP (" + probe.thp_mode + ") can back " + what +
                ", populating it costs ~2.2 s/GiB at start; for a warm pool: " + fix};
  return {"hugepages", warn,
          "plain 4 KiB pages: reads run at 0.36-0.6 of the drive (" + pool + ", THP " +
              (probe.thp_mode.empty() ? "absent" : probe.thp_mode) + "); " + fix +
              ", or enable THP (madvise)"};
}

// The arena a node started now would get: mapped as the node maps it, and a sample of
// its first chunk faulted in, to see how much of it the kernel really backs with huge
// pages (THP may be granted by madvise and still hand out 4 KiB pages).
doctor_line check_arena(const read_section& read) {
  constexpr std::uint64_t sample = 64u << 20;
  try {
    arena_memory memory{read.arena_size, read.arena_chunk, read.arena_pages};
    const auto [offset, bytes] = memory.populate(0, sample);
    const auto huge = std::min(memory.huge_bytes(), bytes);
    const auto share = bytes == 0 ? 0 : static_cast<int>(100 * huge / bytes);
    const std::string got = human_size(read.arena_size) + " arena maps with " +
                            to_string(memory.pages()) + " pages; " + std::to_string(share) +
                            "% of a " + human_size(bytes) + " sample came back huge";
    if (memory.pages() == arena_pages::plain || share < 90)
      return {"arena", warn, got + ": reads run at 0.36-0.6 of the drive on 4 KiB pages"};
    return {"arena", ok, got};
  } catch (const std::exception& e) {
    return {"arena", fail, e.what()};
  }
}

// "ext4 at /var/lib/spillway", or where the data dir will be created when it is missing.
std::string where(const direct_io_probe& probe, const fs::path& data_dir) {
  const std::string fs_name = probe.fs_type.empty() ? "unknown filesystem" : probe.fs_type;
  std::error_code ec;
  if (fs::equivalent(probe.probed_dir, data_dir, ec)) return fs_name + " at " + data_dir.string();
  return fs_name + " at " + probe.probed_dir.string() + " (" + data_dir.string() +
         " does not exist yet)";
}

doctor_line check_direct_io(const direct_io_probe& probe, const fs::path& data_dir) {
  const std::string place = where(probe, data_dir);
  if (probe.direct_ok())
    return {"o_direct", ok, place + ": a 4 KiB O_DIRECT write and read worked"};
  const int err = probe.open_errno ? probe.open_errno : probe.io_errno;
  if (err == EINVAL)
    return {"o_direct", warn,
            place + ": O_DIRECT refused, " + errno_text(err) +
                ": buffered reads will be used for this filesystem"};
  if (probe.open_errno)
    return {"o_direct", fail,
            "cannot create files for storage.data_dir " + data_dir.string() + " in " +
                probe.probed_dir.string() + ": " + errno_text(err) +
                "; fix the path or its permissions"};
  return {"o_direct", fail,
          place + ": O_DIRECT write and read back failed, " + errno_text(err) +
              "; check the drive"};
}

std::uint64_t open_file_hard_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == RLIM_INFINITY)
    return UINT64_MAX;
  return limit.rlim_max;
}

doctor_line check_free_space(const direct_io_probe& probe, const storage_section& storage) {
  if (probe.fs_type.empty())
    return {"space", fail, "statfs failed on " + probe.probed_dir.string()};
  const std::string found = human_size(probe.free_bytes) + " free of " +
                            human_size(probe.total_bytes) + " at " + probe.probed_dir.string();
  const std::uint64_t floor = 2 * storage.bucket_size_limit;
  if (probe.free_bytes < floor)
    return {"space", fail,
            found + ": below 2 x storage.bucket_size_limit (" + human_size(floor) +
                "); free space or move storage.data_dir"};
  if (storage.max_total_size != 0 && probe.free_bytes < storage.max_total_size)
    return {"space", warn,
            found + ": below storage.max_total_size (" + human_size(storage.max_total_size) +
                "), so writes can hit ENOSPC before eviction; lower storage.max_total_size"};
  return {"space", ok, found};
}

// Each sealed bucket keeps its file open in its actor, and the node raises its soft
// limit to the hard one at start; a hard limit below the buckets the store can hold
// makes opens fail once the store fills (EMFILE). Sockets, rings and logs need room too.
doctor_line check_open_files(std::uint64_t hard_limit, const direct_io_probe& probe,
                             const storage_section& storage) {
  constexpr std::uint64_t headroom = 1024;
  const std::uint64_t store = storage.quota(probe.total_bytes);
  const std::uint64_t need = store / storage.bucket_size_limit + headroom;
  const std::string found = "open file limit " + std::to_string(hard_limit) +
                            " (hard); the store holds up to " +
                            std::to_string(store / storage.bucket_size_limit) +
                            " buckets, one open file each";
  if (hard_limit >= need) return {"files", ok, found};
  return {"files", warn,
          found + ": raise the hard limit to " + std::to_string(need) +
              " (ulimit -Hn, LimitNOFILE=) or raise storage.bucket_size_limit"};
}

std::optional<std::string> missing_device(const rdma_device_list& devices,
                                          const std::vector<std::string>& wanted) {
  for (const auto& name : wanted)
    if (std::find(devices.names.begin(), devices.names.end(), name) == devices.names.end())
      return name;
  return std::nullopt;
}

doctor_line check_rdma(const rdma_device_list& devices, const transfer_section& transfer) {
  const std::string found = devices.names.empty() ? "none" : joined(devices.names);
  if (const auto missing = missing_device(devices, transfer.rdma_devices))
    return {"rdma", fail,
            "transfer.rdma_devices names " + *missing + ", which does not exist (found: " +
                found + "); fix transfer.rdma_devices"};
  if (!devices.names.empty()) {
    // What a node does first with rdma: open each device's transfer.rdma_port and pick
    // its GID. A port missing or down, or no GID to send from, fails here as it would there.
    try {
      const rdma_domain domain{rdma_settings(transfer)};
    } catch (const rdma_setup_error& e) {
      return {"rdma", transfer.transport == "rdma" ? fail : warn, found + ": " + e.what()};
    }
    return {"rdma", ok, found + ", port " + std::to_string(transfer.rdma_port) +
                            " up; transfer.transport = \"" + transfer.transport + "\""};
  }
  std::string none = "no RDMA device";
  if (devices.list_errno) none += " (ibv_get_device_list: " + errno_name(devices.list_errno) + ")";
  if (transfer.transport == "rdma")
    return {"rdma", fail,
            none + ": transfer.transport = \"rdma\" cannot run here; set "
                   "transfer.transport = \"tcp\""};
  return {"rdma", warn, none + ": transfers will use " + transfer.transport};
}

// Where a shell would find `name` through PATH.
std::optional<fs::path> find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

doctor_line check_fio() {
  if (const auto fio = find_in_path("fio")) return {"fio", ok, fio->string()};
  return {"fio", warn,
          "not found in PATH: needed only for `spillway bench --fio`; apt-get install fio"};
}

std::string_view level_word(doctor_level level) {
  static constexpr std::string_view words[] = {"ok", "warn", "fail"};
  return words[static_cast<int>(level)];
}

}  // namespace

bool doctor_report::can_run() const {
  return std::none_of(lines.begin(), lines.end(),
                      [](const doctor_line& line) { return line.level == fail; });
}

doctor_report run_doctor(const node_config& config) {
  const uring_probe uring = probe_uring();
  const direct_io_probe disk = probe_direct_io(config.storage.data_dir);
  const std::uint64_t arena = config.read.arena_size;
  doctor_report report;
  report.lines = {
      check_kernel(running_kernel()),
      unless_posix(check_io_uring(uring), config),
      unless_posix(check_defer_taskrun(uring), config),
      unless_posix(check_memlock(probe_memlock(), arena), config),
      check_hugepages(probe_hugepages(), arena),
      check_arena(config.read),
      check_direct_io(disk, config.storage.data_dir),
      check_free_space(disk, config.storage),
      check_open_files(open_file_hard_limit(), disk, config.storage),
      check_rdma(list_rdma_devices(), config.transfer),
      check_fio(),
  };
  return report;
}

std::string format_report(const doctor_report& report) {
  std::size_t width = 0;
  for (const auto& line : report.lines) width = std::max(width, line.check.size());
  std::ostringstream out;
  out << std::left;
  for (const auto& line : report.lines)
    out << std::setw(6) << level_word(line.level) << std::setw(static_cast<int>(width + 2))
        << line.check << line.detail << '\n';
  return out.str();
}

}  // namespace spillway
