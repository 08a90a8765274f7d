// The config tests start their nodes from: the defaults but a 64 MiB arena in two
// chunks, on their own data dir, with no port taken and only errors on stderr. Each test
// changes what it is about.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace spillway::test {

// The arena of every test node, in TOML: the nodes of this process load it, and the
// `spillway` binary's (put, get and gen start one) take it in their config files. The
// default 1 GiB populates in the background, and on a 2-core VM under TSan its first
// touch of cold memory held nodes' answers past their timeouts (CI).
inline constexpr std::string_view small_arena_toml =
  "[read]\narena_size = \"64MiB\"\narena_chunk = \"32MiB\"\n";

inline node_config private_node(const std::filesystem::path& data_dir) {
  auto config = load_config_text(small_arena_toml, "test");
  config.storage.data_dir = data_dir.string();
  config.node.listen = "";
  config.node.log_level = "error";
  return config;
}

// A node other processes reach: node.listen and the transfer engine on free ports of
// 127.0.0.1, one reader, puts sealed at once.
inline node_config published_node(const std::filesystem::path& data_dir) {
  auto config = private_node(data_dir);
  config.node.listen = "127.0.0.1:0";
  config.transfer.listen = "127.0.0.1:0";
  config.read.readers = 1;
  config.storage.seal_after_ms = 5;
  return config;
}

// The arena alone, as a file in `dir` to pass with -c beside --data-dir.
inline std::string small_arena_config(const std::filesystem::path& dir) {
  const auto path = (dir / "small-arena.toml").string();
  std::ofstream{path} << small_arena_toml;
  return path;
}

}  // namespace spillway::test
