// The config tests start their nodes from: the defaults, on their own data dir, with
// no port taken and only errors on stderr. Each test changes what it is about.
#pragma once

#include <filesystem>

#include "config/config.hpp"

namespace spillway::test {

inline node_config private_node(const std::filesystem::path& data_dir) {
  auto config = load_config_text("", "test");
  config.storage.data_dir = data_dir.string();
  config.node.listen = "";
  config.node.log_level = "error";
  return config;
}

}  // namespace spillway::test
