// The `spillway` subcommands that are more than a few lines.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"

namespace spillway {

// Runs a node until SIGINT or SIGTERM, then stops it cleanly; returns the exit code.
int run_serve(const node_config& config);

// Starts a node on the default config in a temporary data dir, prints the effective
// config and the doctor report, and shuts it down.
int run_demo();

// The bucket store from the shell (tools/store_commands.cpp).
struct gen_options {
  std::uint64_t count = 0;
  std::uint64_t size = 0;
  std::uint64_t seed = 1;
  std::string prefix = "gen-";
  bool log_acked = false;  // print "acked KEY" per acknowledged key, for crash tests
};
int run_put(const node_config& config, const std::string& key, const std::string& file);
int run_get(const node_config& config, const std::string& key);
int run_gen(const node_config& config, const gen_options& options);
int run_inspect(const node_config& config, bool verify);

}  // namespace spillway
