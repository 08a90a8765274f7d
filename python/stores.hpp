// The two stores the module offers, behind one shape so that one binding serves both
// (module.cpp): an embedded spillway::node and a remote spillway::client. Every call
// here blocks on I/O and is made with the GIL released; both classes are thread-safe,
// as node and client are, and stop() waits for the calls in flight.
#pragma once

#include <atomic>
#include <cstddef>
#include <chrono>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/client.hpp"
#include "runtime/node.hpp"

namespace spillway::python {

using spans = std::vector<std::span<std::byte>>;

class node_store {
public:
  explicit node_store(node_config config);
  ~node_store();  // stop()

  // Returns once every key is durable and published (its group commit: written,
  // fdatasynced, readable) or failed. The values are written from the caller's memory
  // (node::put_from): whole pages of a value that starts on a page are not copied.
  std::vector<key_status> put(const std::vector<std::string>& keys, const spans& values);
  std::vector<read_value> get(const std::vector<std::string>& keys);
  std::vector<key_status> get_into(const std::vector<std::string>& keys, const spans& targets,
                                   std::vector<std::size_t>& sizes);
  std::vector<std::uint8_t> exists(const std::vector<std::string>& keys);
  std::uint64_t remove(const std::vector<std::string>& keys);
  void register_memory(void* base, std::uint64_t length);
  void unregister_memory(void* base);
  std::string metrics();
  void stop();

private:
  template <class Fn>
  auto with_node(Fn&& fn);  // throws std::runtime_error once stopped

  std::shared_mutex lock_;
  std::unique_ptr<spillway::node> node_;
};

class client_store {
public:
  explicit client_store(const node_config& config);  // its [cluster] table

  std::vector<key_status> put(const std::vector<std::string>& keys, const spans& values);
  std::vector<read_value> get(const std::vector<std::string>& keys);
  // Once memory is registered, client::get_into: the nodes write each value into its
  // target, which must lie in registered memory. Before, values arrive inside messages
  // and are copied into their targets.
  std::vector<key_status> get_into(const std::vector<std::string>& keys, const spans& targets,
                                   std::vector<std::size_t>& sizes);
  void register_memory(void* base, std::uint64_t length);
  void unregister_memory(void* base);
  std::vector<std::uint8_t> exists(const std::vector<std::string>& keys);
  std::uint64_t remove(const std::vector<std::string>& keys);
  std::size_t await_connected(std::chrono::milliseconds limit);
  void stop();

private:
  template <class Fn>
  auto with_client(Fn&& fn);  // throws std::runtime_error once closed

  std::shared_mutex lock_;
  std::unique_ptr<spillway::client> client_;
  std::atomic<std::size_t> registered_{0};  // regions registered with client_
};

}  // namespace spillway::python
