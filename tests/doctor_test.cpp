// Tests of the kernel probes and the doctor on this machine. They assert what the kernel
// actually does (checked independently where a guess would be wrong on another kernel)
// and that the doctor blocks exactly the configurations that cannot run here.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/doctor.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using namespace spillway;

namespace {

// A fresh directory, removed with everything in it when the test ends.
class temp_dir {
public:
  explicit temp_dir(const fs::path& parent) {
    std::string pattern = (parent / "spillway-doctor-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

bool is_empty_dir(const fs::path& dir) {
  return fs::directory_iterator(dir) == fs::directory_iterator();
}

doctor_line line_named(const doctor_report& report, const std::string& check) {
  const auto found = std::find_if(report.lines.begin(), report.lines.end(),
                                  [&](const doctor_line& line) { return line.check == check; });
  REQUIRE_MESSAGE(found != report.lines.end(), "no line named " << check);
  return *found;
}

node_config config_in(const fs::path& data_dir) {
  node_config config;
  config.storage.data_dir = data_dir.string();
  return config;
}

// Whether this kernel lets `dir`'s filesystem open a new file with O_DIRECT, asked
// without the probe's code.
int direct_open_errno(const fs::path& dir) {
  const fs::path file = dir / "independent";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
  const int err = fd < 0 ? errno : 0;
  if (fd >= 0) ::close(fd);
  ::unlink(file.c_str());
  return err;
}

}  // namespace

TEST_SUITE("doctor") {

TEST_CASE("running_kernel parses the release uname reports") {
  utsname names{};
  REQUIRE(::uname(&names) == 0);
  const kernel_version kernel = running_kernel();
  CHECK(kernel.release == names.release);
  CHECK(kernel.major > 0);
  const std::string prefix =
      std::to_string(kernel.major) + "." + std::to_string(kernel.minor) + ".";
  CHECK(kernel.release.rfind(prefix, 0) == 0);
}

TEST_CASE("probe_direct_io on a temp dir under /var/tmp is ok and leaves no file") {
  const temp_dir dir("/var/tmp");
  const direct_io_probe probe = probe_direct_io(dir.path());
  CHECK(probe.probed_dir == dir.path());
  CHECK(probe.direct_ok());
  CHECK(probe.open_errno == 0);
  CHECK(probe.io_errno == 0);
  CHECK_FALSE(probe.fs_type.empty());
  CHECK(probe.free_bytes > 0);
  CHECK(probe.total_bytes >= probe.free_bytes);
  CHECK(is_empty_dir(dir.path()));
}

TEST_CASE("probe_direct_io on a missing subdir probes the nearest existing parent") {
  const temp_dir dir("/var/tmp");
  const direct_io_probe probe = probe_direct_io(dir.path() / "not" / "yet");
  CHECK(probe.probed_dir == dir.path());
  CHECK(probe.direct_ok());
  CHECK(is_empty_dir(dir.path()));  // nothing created, not even the missing dirs
}

TEST_CASE("probe_direct_io on /dev/shm names tmpfs and agrees with a direct open") {
  if (!fs::is_directory("/dev/shm")) {
    return test::skip_test("no /dev/shm");
  }
  const temp_dir dir("/dev/shm");
  const direct_io_probe probe = probe_direct_io(dir.path());
  CHECK(probe.fs_type == "tmpfs");
  CHECK(is_empty_dir(dir.path()));
  const int expected = direct_open_errno(dir.path());
  CHECK(probe.open_errno == expected);
  if (expected == 0) CHECK(probe.io_errno == 0);
}

TEST_CASE("probe_direct_io under a regular file reports the open error") {
  const temp_dir dir("/var/tmp");
  const fs::path file = dir.path() / "plain";
  std::ofstream(file) << "x";
  const direct_io_probe probe = probe_direct_io(file / "data");
  CHECK(probe.probed_dir == file);
  CHECK(probe.open_errno == ENOTDIR);
  CHECK_FALSE(probe.direct_ok());
}

TEST_CASE("probe_uring sets up rings on this machine") {
  std::ifstream sysctl("/proc/sys/kernel/io_uring_disabled");
  int disabled = 0;
  if (sysctl >> disabled && disabled != 0) {
    return test::skip_test("kernel.io_uring_disabled = " + std::to_string(disabled));
  }
  const uring_probe probe = probe_uring();
  CHECK(probe.usable());
  CHECK(probe.setup_errno == 0);
  const kernel_version kernel = running_kernel();
  if (kernel.major > 6 || (kernel.major == 6 && kernel.minor >= 1)) CHECK(probe.defer_taskrun());
}

TEST_CASE("memlock_probe can_register arithmetic") {
  memlock_probe capable;
  capable.soft_limit = 8ull << 20;
  capable.cap_ipc_lock = true;
  CHECK(capable.can_register(1ull << 30));
  CHECK(capable.can_register(64ull << 30));

  memlock_probe limited;
  limited.soft_limit = 8ull << 20;
  CHECK_FALSE(limited.can_register(1ull << 30));
  CHECK_FALSE(limited.can_register(8ull << 20));  // the rings take some of the limit too
  CHECK(limited.can_register(1ull << 20));

  memlock_probe tiny;
  tiny.soft_limit = 64ull << 10;
  CHECK_FALSE(tiny.can_register(4096));

  memlock_probe unlimited;
  unlimited.soft_limit = UINT64_MAX;
  CHECK(unlimited.can_register(1ull << 40));
}

TEST_CASE("probe_hugepages reads the pool and the THP mode") {
  const hugepage_probe probe = probe_hugepages();
  CHECK(probe.hugetlb_free <= probe.hugetlb_total);
  if (fs::exists("/sys/kernel/mm/hugepages")) CHECK(probe.hugetlb_page_size >= (2ull << 20));
  if (fs::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    const std::string mode = probe.thp_mode;
    CHECK((mode == "always" || mode == "madvise" || mode == "never"));
  }
}

TEST_CASE("run_doctor fails transport rdma without an RDMA device") {
  if (!list_rdma_devices().names.empty()) {
    return test::skip_test("this machine has an RDMA device");
  }
  const temp_dir dir("/var/tmp");
  node_config config = config_in(dir.path() / "data");
  config.transfer.transport = "rdma";
  const doctor_report report = run_doctor(config);
  const doctor_line rdma = line_named(report, "rdma");
  CHECK(rdma.level == doctor_level::fail);
  CHECK(rdma.detail.find("transfer.transport = \"tcp\"") != std::string::npos);
  CHECK_FALSE(report.can_run());
}

TEST_CASE("run_doctor with tcp and a data dir under /var/tmp can run") {
  const temp_dir dir("/var/tmp");
  const node_config config = config_in(dir.path() / "data");
  const doctor_report report = run_doctor(config);
  INFO(format_report(report));
  CHECK(report.can_run());
  CHECK(line_named(report, "o_direct").level == doctor_level::ok);
  CHECK(line_named(report, "rdma").level != doctor_level::fail);
  CHECK(is_empty_dir(dir.path()));  // the doctor creates nothing
}

TEST_CASE("the arena line says which pages a node started now would get") {
  const temp_dir dir("/var/tmp");
  node_config config = config_in(dir.path() / "data");
  config.read.arena_size = 64u << 20;
  config.read.arena_chunk = 32u << 20;
  SUBCASE("plain pages are a warning") {
    config.read.arena_pages = "plain";
    const doctor_line arena = line_named(run_doctor(config), "arena");
    CHECK(arena.level == doctor_level::warn);
    CHECK(arena.detail.find("plain pages") != std::string::npos);
  }
  SUBCASE("hugetlb is had from the pool or refused with the key named") {
    config.read.arena_pages = "hugetlb";
    const doctor_line arena = line_named(run_doctor(config), "arena");
    INFO(arena.detail);
    if (probe_hugepages().hugetlb_free_bytes() >= config.read.arena_size) {
      CHECK(arena.level == doctor_level::ok);
      CHECK(arena.detail.find("hugetlb pages; 100%") != std::string::npos);
    } else {
      CHECK(arena.level == doctor_level::fail);
      CHECK(arena.detail.find("read.arena_pages") != std::string::npos);
    }
  }
}

TEST_CASE("the files line weighs the open file limit against the buckets the store holds") {
  const temp_dir dir("/var/tmp");
  node_config config = config_in(dir.path() / "data");
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  REQUIRE(limit.rlim_max != RLIM_INFINITY);
  config.storage.bucket_size_limit = 64u << 20;
  SUBCASE("a store of a few buckets fits") {
    config.storage.max_total_size = 1ull << 30;
    CHECK(line_named(run_doctor(config), "files").level == doctor_level::ok);
  }
  SUBCASE("a store of more buckets than the hard limit is a warning that names the fixes") {
    config.storage.max_total_size = (limit.rlim_max + 1) * config.storage.bucket_size_limit;
    const doctor_line files = line_named(run_doctor(config), "files");
    CHECK(files.level == doctor_level::warn);
    CHECK(files.detail.find("LimitNOFILE") != std::string::npos);
    CHECK(files.detail.find("storage.bucket_size_limit") != std::string::npos);
  }
}

TEST_CASE("run_doctor fails a data dir that cannot be created") {
  const temp_dir dir("/var/tmp");
  const fs::path file = dir.path() / "plain";
  std::ofstream(file) << "x";
  const fs::path data_dir = file / "data";
  const doctor_report report = run_doctor(config_in(data_dir));
  const doctor_line line = line_named(report, "o_direct");
  CHECK(line.level == doctor_level::fail);
  CHECK(line.detail.find(data_dir.string()) != std::string::npos);
  CHECK(line.detail.find("ENOTDIR") != std::string::npos);
  CHECK_FALSE(report.can_run());
}

TEST_CASE("run_doctor fails an rdma_devices entry that does not exist") {
  const temp_dir dir("/var/tmp");
  node_config config = config_in(dir.path());
  config.transfer.rdma_devices = {"mlx5_nowhere"};
  const doctor_report report = run_doctor(config);
  const doctor_line rdma = line_named(report, "rdma");
  CHECK(rdma.level == doctor_level::fail);
  CHECK(rdma.detail.find("mlx5_nowhere") != std::string::npos);
}

TEST_CASE("run_doctor fails when the disk cannot hold two buckets") {
  const temp_dir dir("/var/tmp");
  node_config config = config_in(dir.path());
  config.storage.bucket_size_limit = probe_direct_io(dir.path()).free_bytes;
  const doctor_line space = line_named(run_doctor(config), "space");
  CHECK(space.level == doctor_level::fail);
  CHECK(space.detail.find("storage.bucket_size_limit") != std::string::npos);
}

TEST_CASE("format_report has one line per check and each starts with its level") {
  const temp_dir dir("/var/tmp");
  const doctor_report report = run_doctor(config_in(dir.path()));
  const std::string text = format_report(report);
  std::istringstream lines(text);
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    INFO(line);
    CHECK((line.rfind("ok    ", 0) == 0 || line.rfind("warn  ", 0) == 0 ||
           line.rfind("fail  ", 0) == 0));
    REQUIRE(count < report.lines.size());
    CHECK(line.find(report.lines[count].check) == 6);
  }
  CHECK(count == report.lines.size());
  CHECK(count == 11);
}

}  // TEST_SUITE
