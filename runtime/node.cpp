// Bootstrap and shutdown of a node. Start: lock the data dir, recover its buckets,
// spawn catalog, writer and readers under the supervisor. Stop must never hang: the
// supervisor forwards its exit to every actor it watches, detached ones included, and
// each of them handles it (STACK.md 2.7, 2.9).
#include "runtime/node.hpp"

#include <sys/statvfs.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/catalog.hpp"
#include "actors/reader.hpp"
#include "actors/supervisor.hpp"
#include "actors/writer.hpp"
#include "config/endpoint.hpp"
#include "messages/node.hpp"
#include "messages/store.hpp"
#include "runtime/data_dir_lock.hpp"
#include "runtime/kernel_probe.hpp"
#include "runtime/log.hpp"
#include "runtime/rdma_devices.hpp"
#include "runtime/record_reader.hpp"
#include "runtime/recovery.hpp"

namespace spillway {

struct node::impl {
  node_config config;
  std::optional<data_dir_lock> lock;
  caf::actor_system_config caf_config;  // outlives the system, which keeps a reference
  std::unique_ptr<caf::actor_system> system;
  node_actor supervisor;
  catalog_actor catalog;
  writer_actor writer;
  std::vector<caf::actor> listeners;    // on_evicted callbacks
  std::uint16_t port = 0;

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds{config.cluster.request_timeout_ms};
  }

  // Asks `dest` and waits for the answer; throws std::runtime_error on any error.
  template <class Reply, class Handle, class... Ts>
  Reply ask(const Handle& dest, Ts&&... xs) {
    if (!system) throw std::runtime_error("the node is stopped");
    caf::scoped_actor self{*system};
    Reply result{};
    caf::error failure;
    self->request(dest, timeout(), std::forward<Ts>(xs)...)
      .receive([&](Reply& r) { result = std::move(r); },
               [&](caf::error& err) { failure = std::move(err); });
    if (failure) throw std::runtime_error(system->render(failure));
    return result;
  }
};

namespace {

// Asking for RDMA where there is none is an error, never a quiet switch to tcp.
void check_transport(const transfer_section& transfer) {
  if (transfer.transport != "rdma") return;
  const auto devices = list_rdma_devices();
  if (devices.names.empty())
    throw startup_error(
      "transfer.transport = \"rdma\", but this machine has no RDMA device "
      "(ibv_get_device_list: " +
      std::string{devices.list_errno ? strerrorname_np(devices.list_errno) : "no device"} +
      "); set transfer.transport = \"tcp\"");
}

void lock_data_dir(std::optional<data_dir_lock>& lock, const std::string& dir) {
  try {
    lock.emplace(dir);
  } catch (const std::exception& e) {
    throw startup_error(std::string{"storage.data_dir: "} + e.what());
  }
}

// storage.max_total_size, or 90 % of the data dir's filesystem when it is 0.
std::uint64_t resolve_quota(const storage_section& storage) {
  if (storage.max_total_size != 0) return storage.max_total_size;
  struct statvfs fs{};
  if (::statvfs(storage.data_dir.c_str(), &fs) != 0)
    throw startup_error("storage.data_dir = \"" + storage.data_dir + "\": statvfs failed");
  return static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize / 10 * 9;
}

// Bucket sequences start past every id ever seen in the dir, and past the clock in
// milliseconds, so an id stays unique even after its bucket was evicted and gone.
std::uint64_t first_sequence(const recovered_store& recovered) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::system_clock::now().time_since_epoch());
  return std::max<std::uint64_t>(recovered.highest_sequence + 1,
                                 static_cast<std::uint64_t>(now.count()));
}

recovered_store recover(const storage_section& storage) {
  const auto start = std::chrono::steady_clock::now();
  auto recovered = recover_data_dir(storage.data_dir, storage.quarantine);
  std::size_t keys = 0;
  for (const auto& b : recovered.buckets) keys += b.index.entries.size();
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  spdlog::info("recovered {} buckets, {} records in {:.1f} ms; {} files set aside",
               recovered.buckets.size(), keys, took.count(), recovered.rejected.size());
  return recovered;
}

void configure_actor_system(caf::actor_system_config& caf_config, const node_config& config) {
  if (config.node.scheduler_threads != 0)
    caf_config.set("scheduler.max-threads", config.node.scheduler_threads);
  caf_config.load<caf::io::middleman>();
  register_message_types(caf_config);
}

std::uint16_t publish(caf::actor_system& system, const node_actor& actor,
                      const std::string& listen) {
  const auto where = parse_endpoint(listen);  // validated by the config loader
  auto port = system.middleman().publish(actor, where->port, where->host.c_str(), true);
  if (!port)
    throw startup_error("node.listen = \"" + listen + "\": cannot listen: " +
                        system.render(port.error()));
  return *port;
}

}  // namespace

node::node(node_config config) : impl_(std::make_unique<impl>()) {
  auto& i = *impl_;
  configure_logging(config.node.log_level);
  check_transport(config.transfer);
  lock_data_dir(i.lock, config.storage.data_dir);
  i.config = std::move(config);
  const auto& c = i.config;
  auto recovered = recover(c.storage);
  const writer_options writing{c.storage.data_dir,     c.node.id,
                               c.storage.bucket_size_limit, c.storage.bucket_keys_limit,
                               c.storage.seal_after_ms, first_sequence(recovered),
                               c.read.engine == "uring", c.fault.refuse_o_direct};
  const catalog_options cataloging{resolve_quota(c.storage), c.storage.bucket_size_limit,
                                   c.storage.eviction == "lru", c.fault.refuse_o_direct};

  configure_actor_system(i.caf_config, c);
  i.system = std::make_unique<caf::actor_system>(i.caf_config);
  i.catalog = spawn_catalog(*i.system, cataloging, std::move(recovered));
  i.writer = spawn_writer(*i.system, writing, i.catalog);
  const read_section read = c.read;
  i.supervisor = spawn_supervisor(
    *i.system, c,
    [read](caf::actor_system& system, std::uint32_t index) {
      return spawn_reader(system, index, read);
    },
    {caf::actor_cast<caf::actor>(i.writer), caf::actor_cast<caf::actor>(i.catalog)});
  try {
    if (!c.node.listen.empty()) i.port = publish(*i.system, i.supervisor, c.node.listen);
  } catch (...) {
    stop();  // the actors are running: a throwing constructor must not leave them so
    throw;
  }
  spdlog::info("node {} started: {} readers, data dir {}{}", c.node.id, c.read.readers,
               c.storage.data_dir,
               i.port ? ", listening on port " + std::to_string(i.port) : "");
}

node::~node() { stop(); }

void node::stop() {
  auto& i = *impl_;
  if (!i.system) return;
  caf::anon_send_exit(i.supervisor, caf::exit_reason::user_shutdown);
  for (const auto& l : i.listeners) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  i.supervisor = nullptr;
  i.catalog = nullptr;
  i.writer = nullptr;
  i.listeners.clear();
  i.system->await_all_actors_done();
  i.system.reset();
  i.lock.reset();
  spdlog::info("node {} stopped", i.config.node.id);
}

const node_config& node::config() const { return impl_->config; }

std::uint16_t node::listen_port() const { return impl_->port; }

std::future<std::vector<key_status>> node::put(std::vector<std::string> keys,
                                               std::vector<std::string> values) {
  auto& i = *impl_;
  if (keys.size() != values.size())
    throw std::invalid_argument("put: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values");
  auto promise = std::make_shared<std::promise<std::vector<key_status>>>();
  auto result = promise->get_future();
  const auto n = keys.size();
  if (!i.system) {
    promise->set_value(std::vector<key_status>(n, {key_error::unavailable, 0}));
    return result;
  }
  // The put is enqueued at the writer before this returns, so a flush() that follows
  // seals it. The writer answers `receiver`; hidden, so a stopping node does not
  // wait for it.
  const auto deadline = std::chrono::milliseconds{i.config.storage.seal_after_ms} + i.timeout();
  auto receiver = i.system->spawn<caf::hidden>(
    [promise, n, deadline](caf::event_based_actor* self) -> caf::behavior {
      return {
        [=](put_reply& r) {
          promise->set_value(std::move(r.keys));
          self->quit();
        },
        caf::after(deadline) >> [=] {
          promise->set_value(std::vector<key_status>(n, {key_error::timeout, 0}));
          self->quit();
        },
      };
    });
  caf::send_as(receiver, i.writer, caf::put_atom_v, std::move(keys), std::move(values));
  return result;
}

void node::flush() { impl_->ask<caf::ok_atom>(impl_->writer, caf::flush_atom_v); }

std::vector<read_value> node::read_values(const std::vector<std::string>& keys) {
  auto& i = *impl_;
  std::vector<read_value> out(keys.size());
  const auto where = i.ask<resolve_reply>(i.catalog, caf::resolve_atom_v, keys);
  for (auto k : where.missing) out[k].status = {key_error::not_found, 0};
  for (const auto& group : where.buckets) {
    const auto count = static_cast<std::uint32_t>(group.records.size());
    pinned_file file;
    try {
      file = i.ask<pinned_file>(group.bucket, pin_atom_v, count);
    } catch (const std::runtime_error&) {  // evicted and gone since resolve
      for (const auto& r : group.records) out[r.key_index].status = {key_error::not_found, 0};
      continue;
    }
    for (const auto& r : group.records) {
      std::string problem;
      const bucket_format::index_entry want{keys[r.key_index], r.value_size, r.offset, r.crc};
      auto& result = out[r.key_index];
      result.status = read_record(file.fd, group.bucket_id, want, result.value, problem);
      if (!result.status.ok())
        spdlog::error("key '{}' in bucket {:016x} at offset {}: {}", want.key, group.bucket_id,
                      want.offset, problem);
    }
    caf::anon_send(group.bucket, unpin_atom_v, count);
  }
  return out;
}

std::vector<std::uint8_t> node::exists(const std::vector<std::string>& keys) {
  return impl_->ask<std::vector<std::uint8_t>>(impl_->catalog, exists_atom_v, keys);
}

std::uint64_t node::remove(const std::vector<std::string>& keys) {
  return impl_->ask<std::uint64_t>(impl_->catalog, caf::delete_atom_v, keys);
}

void node::on_evicted(std::function<void(std::vector<std::string>)> callback) {
  auto& i = *impl_;
  if (!i.system) throw std::runtime_error("the node is stopped");
  auto listener = i.system->spawn(
    [callback = std::move(callback)]() -> eviction_listener::behavior_type {
      return {[callback](evicted_atom, std::vector<std::string>& keys) {
        callback(std::move(keys));
      }};
    });
  caf::anon_send(i.catalog, caf::subscribe_atom_v, listener);
  i.listeners.push_back(caf::actor_cast<caf::actor>(listener));
}

node_stats node::stats() { return impl_->ask<node_stats>(impl_->supervisor, stats_atom_v); }

catalog_stats node::store_stats() {
  return impl_->ask<catalog_stats>(impl_->catalog, stats_atom_v);
}

}  // namespace spillway
