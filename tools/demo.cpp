// `spillway demo`, the README's main command: a node on the embedded defaults, in a
// temporary data dir on the real disk (not tmpfs), started, described and stopped.
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

// Removes the demo's data dir however the demo ends.
struct temp_dir {
  std::filesystem::path path = make_temp_dir();
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

void print_stats(const node_stats& stats) {
  std::cout << "readers:\n";
  for (const auto& r : stats.readers)
    std::cout << "  reader " << r.index << ": " << r.engine << ", ring flags 0x" << std::hex
              << r.ring_flags << std::dec << "\n";
}

}  // namespace

int run_demo() {
  temp_dir data;
  auto config = load_config_text("", "<demo defaults>");
  config.storage.data_dir = data.path.string();
  config.node.listen = "127.0.0.1:0";  // any free port: the demo must not collide
  config.transfer.listen = "127.0.0.1:0";

  std::cout << "# effective config\n" << to_toml(config) << "\n# doctor\n";
  const auto report = run_doctor(config);
  std::cout << format_report(report);
  if (!report.can_run()) {
    std::cerr << "spillway demo: this machine cannot run a node (see the fail lines)\n";
    return 1;
  }
  std::cout.flush();  // the node logs to stderr: keep the two in order on one terminal
  node demo_node{config};
  std::cout << "\n# node\nlistening on 127.0.0.1:" << demo_node.listen_port() << "\n";
  print_stats(demo_node.stats());
  demo_node.stop();
  std::cout << "stopped cleanly\n";
  return 0;
}

}  // namespace spillway
