#include "python/stores.hpp"

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace spillway::python {

namespace {

void check_lengths(const char* what, std::size_t keys, std::size_t values) {
  if (keys != values)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(keys) + " keys but " +
                                std::to_string(values) + " memory items");
}

}  // namespace

node_store::node_store(node_config config)
  : node_(std::make_unique<spillway::node>(std::move(config))) {}

node_store::~node_store() { stop(); }

template <class Fn>
auto node_store::with_node(Fn&& fn) {
  std::shared_lock guard{lock_};
  if (!node_) throw std::runtime_error("the node is stopped");
  return fn(*node_);
}

std::vector<key_status> node_store::put(const std::vector<std::string>& keys,
                                        const spans& values) {
  check_lengths("values", keys.size(), values.size());
  return with_node([&](spillway::node& n) {
    return n.put_from(keys, {values.begin(), values.end()}).get();
  });
}

std::vector<read_value> node_store::get(const std::vector<std::string>& keys) {
  return with_node([&](spillway::node& n) { return n.read_values(keys); });
}

std::vector<key_status> node_store::get_into(const std::vector<std::string>& keys,
                                             const spans& targets,
                                             std::vector<std::size_t>& sizes) {
  check_lengths("targets", keys.size(), targets.size());
  return with_node([&](spillway::node& n) { return n.get_batch_into(keys, targets, sizes); });
}

std::vector<std::uint8_t> node_store::exists(const std::vector<std::string>& keys) {
  return with_node([&](spillway::node& n) { return n.exists(keys); });
}

std::uint64_t node_store::remove(const std::vector<std::string>& keys) {
  return with_node([&](spillway::node& n) { return n.remove(keys); });
}

void node_store::register_memory(void* base, std::uint64_t length) {
  with_node([&](spillway::node& n) { n.register_memory(base, length); });
}

void node_store::unregister_memory(void* base) {
  with_node([&](spillway::node& n) { n.unregister_memory(base); });
}

std::string node_store::metrics() {
  return with_node([&](spillway::node& n) { return n.metrics(); });
}

void node_store::stop() {
  std::unique_lock guard{lock_};
  node_.reset();
}

client_store::client_store(const node_config& config)
  : client_(std::make_unique<spillway::client>(config.cluster, client_transfer_defaults(),
                                                config.security)) {}

template <class Fn>
auto client_store::with_client(Fn&& fn) {
  std::shared_lock guard{lock_};
  if (!client_) throw std::runtime_error("the client is closed");
  return fn(*client_);
}

std::vector<key_status> client_store::put(const std::vector<std::string>& keys,
                                          const spans& values) {
  check_lengths("values", keys.size(), values.size());
  // put_from copies a value that travels inline (the one copy a remote put makes on
  // this side, with the GIL released); a larger one in registered memory is pulled.
  return with_client([&](spillway::client& c) {
    return c.put_from(keys, {values.begin(), values.end()});
  });
}

std::vector<read_value> client_store::get(const std::vector<std::string>& keys) {
  return with_client([&](spillway::client& c) { return c.get(keys); });
}

std::vector<key_status> client_store::get_into(const std::vector<std::string>& keys,
                                               const spans& targets,
                                               std::vector<std::size_t>& sizes) {
  check_lengths("targets", keys.size(), targets.size());
  if (registered_ > 0)
    return with_client([&](spillway::client& c) { return c.get_into(keys, targets, sizes); });
  auto values = get(keys);
  std::vector<key_status> statuses(keys.size());
  sizes.assign(keys.size(), 0);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    statuses[k] = values[k].status;
    sizes[k] = values[k].value.size();
    if (!statuses[k].ok()) continue;
    if (values[k].value.size() > targets[k].size()) statuses[k] = {key_error::too_large, 0};
    else std::memcpy(targets[k].data(), values[k].value.data(), values[k].value.size());
  }
  return statuses;
}

void client_store::register_memory(void* base, std::uint64_t length) {
  with_client([&](spillway::client& c) { c.register_memory(base, length); });
  ++registered_;
}

void client_store::unregister_memory(void* base) {
  with_client([&](spillway::client& c) { c.unregister_memory(base); });
  --registered_;
}

std::vector<std::uint8_t> client_store::exists(const std::vector<std::string>& keys) {
  return with_client([&](spillway::client& c) { return c.exists(keys).present; });
}

std::uint64_t client_store::remove(const std::vector<std::string>& keys) {
  return with_client([&](spillway::client& c) { return c.remove(keys); });
}

std::size_t client_store::await_connected(std::chrono::milliseconds limit) {
  return with_client([&](spillway::client& c) { return c.await_connected(limit); });
}

void client_store::stop() {
  std::unique_lock guard{lock_};
  client_.reset();
}

}  // namespace spillway::python
