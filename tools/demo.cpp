// `spillway demo`, the README's main command, on the embedded defaults: check the
// machine, write 2 GiB of 1.8 MiB values through the put path into a temporary data
// dir on the real disk (not tmpfs), read them back cold in batches in `window` and
// `group` modes, verify every byte, print the table and the cold start, clean up.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "runtime/doctor.hpp"
#include "runtime/node.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

// /var/tmp rather than /tmp: /tmp is tmpfs on many machines, and the demo is about
// the disk.
std::filesystem::path make_temp_dir() {
  std::string pattern = "/var/tmp/spillway-demo-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw startup_error("cannot create a temporary data dir under /var/tmp");
  return pattern;
}

// Removes the demo's data however the demo ends.
struct temp_dir {
  std::filesystem::path path = make_temp_dir();
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

int run_demo(const std::string& metrics) {
  temp_dir data;
  auto config = load_config_text("", "<demo defaults>");
  config.storage.data_dir = (data.path / "node").string();
  std::cout << "# effective config\n" << to_toml(config) << "\n# doctor\n";
  const auto report = run_doctor(config);
  std::cout << format_report(report) << std::flush;
  if (!report.can_run()) {
    std::cerr << "spillway demo: this machine cannot run a node (see the fail lines)\n";
    return 1;
  }
  bench_read_options demo;
  demo.object_sizes = {1887436};
  demo.dataset_bytes = 2ull << 30;
  demo.concurrency = {1, 2};
  demo.arena_bytes = 1ull << 30;  // two batches of 430 MB
  demo.runs = 1;
  demo.fio = false;
  demo.verify = true;
  demo.dir = data.path;
  demo.metrics = metrics;
  std::cout << "\n# read back cold, window against group\n" << std::flush;
  return run_bench_read(demo);
}

}  // namespace spillway
