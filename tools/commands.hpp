// The `spillway` subcommands that are more than a few lines, one file each.
#pragma once

#include "config/config.hpp"

namespace spillway {

// Runs a node until SIGINT or SIGTERM, then stops it cleanly; returns the exit code.
int run_serve(const node_config& config);

// Starts a node on the default config in a temporary data dir, prints the effective
// config and the doctor report, and shuts it down.
int run_demo();

}  // namespace spillway
