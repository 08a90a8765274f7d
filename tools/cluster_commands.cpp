// `spillway put|get|exists|rm|stats` against running nodes: --cluster FILE (any TOML
// with [cluster] nodes) places keys as spillway::client does; --node host:port asks
// that one node. Exit 1 names each key that failed.
#include <iostream>
#include <span>
#include <stdexcept>

#include "runtime/client.hpp"
#include "runtime/metrics.hpp"
#include "runtime/storage/printable_key.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

int failed(const char* command, const std::string& key, const key_status& status) {
  std::cerr << "spillway " << command << ": " << printable_key(key) << ": " << to_string(status)
            << "\n";
  return 1;
}

}  // namespace

// A value too large for a message is registered, and its owners pull it from there
// (client::put_from): they reach this process's transfer host on 127.0.0.1.
int run_remote_put(const remote_nodes& nodes, const std::string& key, std::string value) {
  client c{nodes.cluster, client_transfer_defaults(), nodes.security};
  const auto bytes = std::as_bytes(std::span{value});
  if (value.size() > client::inline_value_limit()) c.register_memory(value.data(), value.size());
  const auto status = c.put_from({key}, {bytes}).at(0);
  return status.ok() ? 0 : failed("put", key, status);
}

int run_remote_get(const remote_nodes& nodes, const std::string& key) {
  client c{nodes.cluster, client_transfer_defaults(), nodes.security};
  const auto got = c.get({key}).at(0);
  if (!got.status.ok()) return failed("get", key, got.status);
  std::cout.write(got.value.data(), static_cast<std::streamsize>(got.value.size()));
  return std::cout.good() ? 0 : 1;
}

int print_exists(const std::vector<std::string>& keys, const std::vector<std::uint8_t>& present) {
  std::size_t prefix = 0;
  while (prefix < present.size() && present[prefix]) ++prefix;
  for (std::size_t k = 0; k < keys.size(); ++k)
    std::cout << (present[k] ? "present " : "absent ") << printable_key(keys[k]) << "\n";
  std::cout << "prefix " << prefix << "\n";
  return 0;
}

int run_remote_exists(const remote_nodes& nodes, const std::vector<std::string>& keys) {
  client c{nodes.cluster, client_transfer_defaults(), nodes.security};
  return print_exists(keys, c.exists(keys).present);
}

int run_remote_remove(const remote_nodes& nodes, const std::vector<std::string>& keys) {
  client c{nodes.cluster, client_transfer_defaults(), nodes.security};
  std::cout << "removed " << c.remove(keys) << "\n";
  return 0;
}

int run_remote_stats(const remote_nodes& nodes) {
  client c{nodes.cluster, client_transfer_defaults(), nodes.security};
  int code = 0;
  for (const auto& r : c.stats()) {
    std::cout << "# node " << r.node << "\n";
    if (r.error.empty()) {
      std::cout << prometheus_text(r.report);
      continue;
    }
    std::cerr << "spillway stats: " << r.node << ": " << r.error << "\n";
    code = 1;
  }
  return code;
}

}  // namespace spillway
