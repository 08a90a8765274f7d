// The `spillway` command: serve a node, run the demo, print the config, check the
// machine. Exit codes: 0 success, 1 the work failed, 2 bad usage or bad config.
//
// Build: cmake -S . -B build && cmake --build build  (or tools/run.sh demo)
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "config/config.hpp"
#include "runtime/doctor.hpp"
#include "runtime/node.hpp"
#include "tools/commands.hpp"

namespace {

constexpr int exit_usage = 2;

// With -c, the file; without, the defaults (an empty file is a valid node).
spillway::node_config load(const std::string& path) {
  if (path.empty()) return spillway::load_config_text("", "<defaults>");
  return spillway::load_config_file(path);
}

int doctor_command(const spillway::node_config& config) {
  const auto report = spillway::run_doctor(config);
  std::cout << spillway::format_report(report);
  if (report.can_run()) return 0;
  std::cerr << "spillway doctor: this node cannot run here (see the fail lines)\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spillway: the SSD tier of a KV-cache node"};
  app.require_subcommand(1);
  std::string config_path;

  auto* serve = app.add_subcommand("serve", "Run a node until SIGINT or SIGTERM");
  serve->add_option("-c,--config", config_path, "Node config (TOML)")->required();
  auto* demo = app.add_subcommand("demo", "Start a node on the defaults in a temporary dir");
  auto* config = app.add_subcommand("config", "Show the effective config");
  bool print = false;
  config->add_flag("--print", print, "Print it as TOML, every default filled in")->required();
  config->add_option("-c,--config", config_path, "Node config (TOML)");
  auto* doctor = app.add_subcommand("doctor", "Check this machine against the config");
  doctor->add_option("-c,--config", config_path, "Node config (TOML)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help (code 0) or the error and a hint
    return code == 0 ? 0 : exit_usage;
  }

  try {
    if (*demo) return spillway::run_demo();
    const auto node_config = load(config_path);
    if (*serve) return spillway::run_serve(node_config);
    if (*config) std::cout << spillway::to_toml(node_config);
    if (*doctor) return doctor_command(node_config);
    return 0;
  } catch (const spillway::config_error& e) {
    std::cerr << e.what() << "\n";
    return exit_usage;
  } catch (const spillway::startup_error& e) {
    std::cerr << "spillway: cannot start the node: " << e.what() << "\n";
    return 1;
  }
}
