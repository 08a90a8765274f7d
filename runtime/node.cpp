// Bootstrap and shutdown of a node. Start: lock the data dir, recover its buckets,
// spawn catalog, writer and readers under the supervisor. Stop must never hang: the
// supervisor forwards its exit to every actor it watches, detached ones included, and
// each of them handles it (STACK.md 2.7, 2.9).
#include "runtime/node.hpp"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
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

#include "actors/arena.hpp"
#include "actors/catalog.hpp"
#include "actors/meter.hpp"
#include "actors/reader.hpp"
#include "actors/service.hpp"
#include "actors/registrar.hpp"
#include "actors/supervisor.hpp"
#include "actors/transfer_engine.hpp"
#include "actors/writer.hpp"
#include "config/endpoint.hpp"
#include "messages/node.hpp"
#include "messages/store.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/control_channel.hpp"
#include "runtime/tls.hpp"
#include "runtime/storage/crash_point.hpp"
#include "runtime/storage/data_dir_lock.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/io/progress.hpp"
#include "runtime/log.hpp"
#include "runtime/memory_regions.hpp"
#include "runtime/metrics.hpp"
#include "runtime/net/metrics_endpoint.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "runtime/rdma/rdma_selection.hpp"
#include "runtime/storage/recovery.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {

struct node::impl {
  node_config config;
  std::optional<data_dir_lock> lock;
  caf::actor_system_config caf_config;  // outlives the system, which keeps a reference
  std::unique_ptr<caf::actor_system> system;
  supervisor_actor supervisor;
  catalog_actor catalog;
  writer_actor writer;
  registrar_actor registrar;
  arena_actor arena;
  meter_actor meter;
  service_actor service;                // what node.listen publishes, behind its guard
  control_listener listener;            // node.listen
  std::vector<caf::actor> listeners;    // on_evicted callbacks
  std::shared_ptr<transfer_engine> transfer;  // shared with the service, for get_into
  std::uint16_t port = 0;
  std::unique_ptr<metrics_endpoint> metrics;  // node.metrics_listen
  std::mutex memory_lock;  // callers may register memory from any thread
  std::optional<memory_regions> memory;

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds{config.cluster.request_timeout_ms};
  }

  // A batch has its own deadline (read.timeout_ms); this one only bounds a lost reply.
  std::chrono::milliseconds batch_deadline() const {
    return std::chrono::milliseconds{config.read.timeout_ms * 2};
  }

  // A put is answered once its bucket is sealed, at the latest storage.seal_after_ms on.
  std::chrono::milliseconds put_deadline() const {
    return std::chrono::milliseconds{config.storage.seal_after_ms} + timeout();
  }

  // Reads `keys` letting the batch answer in waves, into `targets` where it can (none:
  // all into the arena); `take(k, item)` sees each key's item while its extent is held,
  // and the leases go back right after.
  using copy_fn = std::function<void(std::size_t, const get_item&)>;
  void copy_batch(const std::vector<std::string>& keys, std::vector<read_target> targets,
                  const copy_fn& take);

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
  try {
    select_rdma_devices(list_rdma_devices(), transfer.rdma_devices);
  } catch (const rdma_setup_error& e) {
    throw startup_error(e.what());
  }
}

void lock_data_dir(std::optional<data_dir_lock>& lock, const storage_section& storage) {
  try {
    lock.emplace(storage.data_dir, static_cast<mode_t>(storage.file_mode));
  } catch (const std::exception& e) {
    throw startup_error(std::string{"storage.data_dir: "} + e.what());
  }
}

std::uint64_t resolve_quota(const storage_section& storage) {
  if (storage.max_total_size != 0) return storage.max_total_size;
  struct statvfs fs{};
  if (::statvfs(storage.data_dir.c_str(), &fs) != 0)
    throw startup_error("storage.data_dir = \"" + storage.data_dir + "\": statvfs failed");
  return storage.quota(static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize);
}

// Bucket sequences start past every id ever seen in the dir, and past the clock in
// milliseconds, so an id stays unique even after its bucket was evicted and gone.
std::uint64_t first_sequence(const recovered_store& recovered) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::system_clock::now().time_since_epoch());
  return std::max<std::uint64_t>(recovered.highest_sequence + 1,
                                 static_cast<std::uint64_t>(now.count()));
}

// `room`: what the bucket files and quarantine/ may take together.
recovered_store recover(const storage_section& storage, std::uint64_t room) {
  const auto start = std::chrono::steady_clock::now();
  progress shown{"recovery", "files", 0};
  recovered_store recovered;
  try {
    recovered = recover_data_dir(
      storage.data_dir,
      {storage.quarantine, room, dir_mode_for(static_cast<mode_t>(storage.file_mode)), &shown,
       static_cast<mode_t>(storage.file_mode)});
  } catch (const forget_log_unreadable& e) {
    throw startup_error(std::string{"storage.data_dir: "} + e.what());
  }
  shown.finish();  // before the log line, which would otherwise land on it
  std::size_t keys = 0;
  for (const auto& b : recovered.buckets) keys += b.index.entries.size();
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  spdlog::info("recovered {} buckets, {} records in {:.1f} ms; {} files set aside; {} records "
               "dropped as removed or evicted ({} of {} forget-log entries kept)",
               recovered.buckets.size(), keys, took.count(), recovered.rejected.size(),
               recovered.forget.records_dropped, recovered.forget.entries_kept,
               recovered.forget.entries_read);
  return recovered;
}

// Without TLS, anyone who reaches node.listen or transfer.listen can store, read and
// delete keys, and CAF allocates what a connection's message header claims (up to 4
// GiB): off loopback only when the config says so, and then loudly. With TLS, a peer
// must hold a certificate of the cluster's CA before CAF reads a byte of it.
void check_listeners(const node_config& config) {
  if (config.security.tls()) return;
  for (const auto& [key, listen] : {std::pair{"node.listen", config.node.listen},
                                    std::pair{"transfer.listen", config.transfer.listen}}) {
    const auto where = parse_endpoint(listen);  // validated by the config loader
    if (!where || is_loopback(where->host)) continue;
    if (!config.security.allow_insecure)
      throw startup_error(std::string{key} + " = \"" + listen +
                          "\": not a loopback address, and the node has no TLS yet: anyone "
                          "who reaches it can store, read and delete keys. Set "
                          "security.allow_insecure = true to listen there anyway");
    spdlog::warn("INSECURE: {} = \"{}\" is reachable from other machines without TLS or "
                 "authentication (security.allow_insecure = true): anyone who reaches it can "
                 "store, read and delete keys",
                 key, listen);
  }
}

// Every sealed bucket keeps its file open (its bucket actor's fd), so a store of
// thousands of buckets needs more than the usual soft limit of 1024 descriptors.
void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    spdlog::warn("cannot raise the open file limit: stores of many buckets may fail to open");
}

control_listener publish(caf::actor_system& system, const service_actor& actor,
                         const std::string& listen) {
  const auto where = parse_endpoint(listen);  // validated by the config loader
  try {
    return publish_node_service(system, actor, where->host, where->port, true);
  } catch (const std::runtime_error& e) {
    throw startup_error("node.listen = \"" + listen + "\": cannot listen: " + e.what());
  }
}

std::unique_ptr<metrics_endpoint> serve_metrics(const std::string& listen,
                                                std::function<std::string()> render) {
  const auto where = parse_endpoint(listen);  // validated by the config loader
  try {
    return std::make_unique<metrics_endpoint>(where->host, where->port, std::move(render));
  } catch (const std::exception& e) {
    throw startup_error("node.metrics_listen = \"" + listen + "\": " + e.what());
  }
}

// The actors below take their state as spawn arguments rather than lambda captures:
// CAF 0.17 dereferences a null argument tuple for an actor spawned with none
// (UBSan: "reference binding to null pointer" in init_fun_factory).

// Turns the writer's answer to one put into the value of that put's future: its
// answer, `unavailable` if the writer is gone first, `timeout` after a deadline. A put
// from caller memory has none: its future tells the caller its memory is free again.
caf::behavior put_receiver(caf::event_based_actor* self,
                           std::shared_ptr<std::promise<std::vector<key_status>>> promise,
                           std::size_t keys, std::optional<std::chrono::milliseconds> deadline,
                           writer_actor writer) {
  auto fail_all = [self, promise, keys](key_error why) {
    promise->set_value(std::vector<key_status>(keys, {why, 0}));
    self->quit();
  };
  self->monitor(writer);
  self->set_down_handler([fail_all](caf::down_msg&) { fail_all(key_error::unavailable); });
  auto answer = [self, promise](put_reply& r) {
    promise->set_value(std::move(r.keys));
    self->quit();
  };
  if (!deadline) return {answer};
  return {answer, caf::after(*deadline) >> [fail_all] { fail_all(key_error::timeout); }};
}

// Sends `writer` a put of `keys` with `values` (strings, or caller_values); the future
// gets its answer, or `unavailable` at once when the node is stopped (no system). The
// put is enqueued at the writer before this returns, so a flush() that follows seals
// it. The writer answers a receiver of its own; hidden, so a stopping node does not
// wait for it.
template <class Values>
std::future<std::vector<key_status>> send_put(caf::actor_system* system,
                                              const writer_actor& writer,
                                              std::vector<std::string> keys, Values values,
                                              std::optional<std::chrono::milliseconds> deadline) {
  auto promise = std::make_shared<std::promise<std::vector<key_status>>>();
  auto result = promise->get_future();
  const auto n = keys.size();
  if (!system) {
    promise->set_value(std::vector<key_status>(n, {key_error::unavailable, 0}));
    return result;
  }
  auto receiver = system->spawn<caf::hidden>(put_receiver, promise, n, deadline, writer);
  caf::send_as(receiver, writer, caf::put_atom_v, std::move(keys), std::move(values));
  return result;
}

eviction_listener::behavior_type eviction_callback(
  eviction_listener::pointer, std::function<void(std::vector<std::string>)> callback) {
  return {[callback](evicted_atom, std::vector<std::string>& keys) { callback(std::move(keys)); }};
}

// Calls `fn(key position, item)` for each item of a reply or a wave.
template <class F>
void for_each_item(const get_reply& reply, F fn) {
  for (std::size_t j = 0; j < reply.items.size(); ++j)
    fn(reply.positions.empty() ? j : reply.positions[j], reply.items[j]);
}

}  // namespace

node::node(node_config config) : impl_(std::make_unique<impl>()) {
  auto& i = *impl_;
  configure_logging(config.node.log_level, config.node.log_format);
  check_transport(config.transfer);
  check_listeners(config);
  check_tls_files(config.security);
  raise_open_file_limit();
  lock_data_dir(i.lock, config.storage);
  i.config = std::move(config);
  const auto& c = i.config;
  const auto quota = resolve_quota(c.storage);
  const auto open_bucket_room = c.storage.bucket_size_limit;  // kept free for the writer
  if (c.fault.enabled && c.fault.kill_at != "none")
    arm_crash_point(*crash_point_named(c.fault.kill_at), c.fault.kill_at_hit);
  auto recovered = recover(c.storage, quota - std::min(quota, open_bucket_room));
  const writer_options writing{c.storage.data_dir,     c.node.id,
                               c.storage.bucket_size_limit, c.storage.bucket_keys_limit,
                               c.storage.seal_after_ms, first_sequence(recovered),
                               c.read.engine == "uring", c.fault.refuse_o_direct,
                               static_cast<unsigned>(c.storage.file_mode),
                               recovered.forget.append_at};
  // quarantine/ takes its share of the quota as if it were part of the open bucket.
  const catalog_options cataloging{c.storage.data_dir, quota,
                                   open_bucket_room + recovered.quarantine_bytes,
                                   c.storage.eviction == "lru", c.fault.refuse_o_direct,
                                   c.storage.max_open_files, true};

  configure_actor_system(i.caf_config, c.node.scheduler_threads, c.security);
  i.system = std::make_unique<caf::actor_system>(i.caf_config);
  i.transfer = std::make_shared<transfer_engine>(*i.system, c.transfer, c.fault);
  i.catalog = spawn_catalog(*i.system, cataloging, std::move(recovered));
  // The catalog has loaded every recovered key once it answers. Asked before the arena
  // starts zeroing its pages, which would slow that load down (actors/arena.cpp).
  i.ask<catalog_stats>(i.catalog, stats_atom_v);
  i.meter = spawn_meter(*i.system);
  i.writer = spawn_writer(*i.system, writing, i.catalog, i.meter);
  caf::anon_send(i.catalog, forget_atom_v, forget_actor{i.writer});  // evictions may go now
  const auto chunks = static_cast<std::uint32_t>(
    (c.read.arena_size + c.read.arena_chunk - 1) / c.read.arena_chunk);
  const auto memory_slots = static_cast<std::uint32_t>(c.read.memory_slots);
  i.memory.emplace(chunks, memory_slots);
  i.registrar = spawn_registrar(*i.system, chunks + memory_slots);
  try {
    i.arena = spawn_arena(*i.system, c.read, i.registrar);
  } catch (const std::exception& e) {
    stop_services();
    throw startup_error(std::string{"read.arena_size: "} + e.what());
  }
  i.supervisor = spawn_supervisor(
    *i.system, c,
    [read = c.read, faults = c.fault, registrar = i.registrar](caf::actor_system& system,
                                                               std::uint32_t index) {
      return spawn_reader(system, index, read, faults, registrar);
    },
    {i.catalog, i.writer, i.registrar, i.arena, i.meter});
  i.service = spawn_service(*i.system, {i.timeout(), i.put_deadline(), i.batch_deadline(),
                                        i.transfer, i.supervisor, i.catalog, i.writer, i.arena,
                                        i.meter});
  try {
    if (!c.node.listen.empty()) {
      i.listener = publish(*i.system, i.service, c.node.listen);
      i.port = i.listener.port();
    }
    if (!c.node.metrics_listen.empty())
      i.metrics = serve_metrics(c.node.metrics_listen, [this] { return metrics(); });
  } catch (...) {
    stop();  // the actors are running: a throwing constructor must not leave them so
    throw;
  }
  spdlog::info("node {} started: {} readers, data dir {}{}", c.node.id, c.read.readers,
               c.storage.data_dir,
               i.port ? ", listening on port " + std::to_string(i.port) +
                          (c.security.tls() ? " (TLS)" : "")
                      : "");
}

node::~node() { stop(); }

void node::stop() {
  auto& i = *impl_;
  if (!i.system) return;
  i.metrics.reset();  // no scrape asks the actors once they are told to stop
  caf::anon_send_exit(i.supervisor, caf::exit_reason::user_shutdown);
  stop_services();
  spdlog::info("node {} stopped", i.config.node.id);
}

// Without a timeout: a blocking request's timeout holds its scoped actor in the clock,
// and the actor system's destructor waits for that actor until the timeout passes.
bool node::drain() {
  auto& i = *impl_;
  if (!i.service) return true;
  i.listener.unpublish();
  caf::scoped_actor self{*i.system};
  bool drained = false;
  self->request(i.service, caf::infinite, caf::close_atom_v)
    .receive([&](caf::ok_atom) { drained = true; },
             [&](caf::error& err) { spdlog::warn("drain: {}", i.system->render(err)); });
  return drained;
}

// Every handle is dropped before the system goes: a detached actor's thread waits for
// the last reference to its actor, and the system waits for that thread.
void node::stop_services() {
  auto& i = *impl_;
  if (i.transfer) i.transfer->stop();  // its routes and services, before the actors are awaited
  i.transfer.reset();
  i.listener.stop();
  for (auto a : {caf::actor_cast<caf::actor>(i.service), caf::actor_cast<caf::actor>(i.writer),
                 caf::actor_cast<caf::actor>(i.catalog), caf::actor_cast<caf::actor>(i.registrar),
                 caf::actor_cast<caf::actor>(i.arena), caf::actor_cast<caf::actor>(i.meter)})
    if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  for (const auto& l : i.listeners) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  i.supervisor = nullptr;
  i.service = nullptr;
  i.catalog = nullptr;
  i.writer = nullptr;
  i.registrar = nullptr;
  i.arena = nullptr;
  i.meter = nullptr;
  i.listeners.clear();
  i.system->await_all_actors_done();
  i.system.reset();
  i.lock.reset();
}

const node_config& node::config() const { return impl_->config; }

std::uint16_t node::listen_port() const { return impl_->port; }

std::uint16_t node::metrics_port() const { return impl_->metrics ? impl_->metrics->port() : 0; }

io_stats node::io() { return impl_->ask<io_stats>(impl_->meter, stats_atom_v); }

transfer_stats node::transfers() {
  if (!impl_->transfer) throw std::runtime_error("the node is stopped");
  return impl_->transfer->stats();
}

std::string node::metrics() {
  return prometheus_text({stats(), store_stats(), read_stats(), io(), transfers()});
}

std::future<std::vector<key_status>> node::put(std::vector<std::string> keys,
                                               std::vector<std::string> values) {
  auto& i = *impl_;
  if (keys.size() != values.size())
    throw std::invalid_argument("put: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values");
  return send_put(i.system.get(), i.writer, std::move(keys), std::move(values), i.put_deadline());
}

std::future<std::vector<key_status>> node::put_from(
  std::vector<std::string> keys, const std::vector<std::span<const std::byte>>& values) {
  auto& i = *impl_;
  if (keys.size() != values.size())
    throw std::invalid_argument("put_from: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values");
  caller_values refs;
  refs.address.reserve(values.size());
  refs.size.reserve(values.size());
  for (const auto& v : values) {
    refs.address.push_back(reinterpret_cast<std::uintptr_t>(v.data()));
    refs.size.push_back(v.size());
  }
  return send_put(i.system.get(), i.writer, std::move(keys), std::move(refs), std::nullopt);
}

void node::flush() { impl_->ask<caf::ok_atom>(impl_->writer, caf::flush_atom_v); }

batch_values node::get_batch(const std::vector<std::string>& keys, const std::string& mode) {
  auto& i = *impl_;
  if (!i.system) throw std::runtime_error("the node is stopped");
  if (!mode.empty() && mode != "window" && mode != "group")
    throw std::invalid_argument("get_batch: mode \"" + mode + "\" is not window or group");
  // The actor that asks holds the leases: the arena reclaims them only once it is gone,
  // so it lives as long as the views do (a lease of a reply that never arrived comes
  // back when it goes at the end of this call). The batch has its own deadline
  // (read.timeout_ms); this one only bounds a lost reply.
  auto holder = std::make_shared<caf::scoped_actor>(*i.system);
  get_reply reply;
  caf::error failure;
  (*holder)->request(i.supervisor, i.batch_deadline(), caf::get_atom_v, keys, mode, false)
    .receive([&](get_reply& r) { reply = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  batch_values out;
  out.values_.resize(keys.size());
  for (auto& v : out.values_) v.status = {key_error::unavailable, 0};
  if (failure) return out;
  for_each_item(reply, [&](std::size_t k, const get_item& item) {
    out.values_[k].status = item.status;
    if (item.status.ok())
      out.values_[k].bytes = {reinterpret_cast<const std::byte*>(item.address), item.size};
  });
  out.release_ = [arena = i.arena, leases = std::move(reply.leases), holder] {
    for (auto lease : leases) caf::anon_send(arena, release_atom_v, lease);
  };
  return out;
}

void node::impl::copy_batch(const std::vector<std::string>& keys,
                            std::vector<read_target> targets, const copy_fn& take) {
  if (!system) throw std::runtime_error("the node is stopped");
  caf::scoped_actor self{*system};
  std::vector<bool> answered(keys.size(), false);
  auto consume = [&](get_reply& part) {
    for_each_item(part, [&](std::size_t k, const get_item& item) {
      take(k, item);
      answered[k] = true;
    });
    for (auto lease : part.leases) caf::anon_send(arena, release_atom_v, lease);
  };
  // A plain send, not a request: the batch answers with waves, then with the rest.
  if (targets.empty()) self->send(supervisor, caf::get_atom_v, keys, std::string{}, true);
  else self->send(supervisor, caf::get_atom_v, keys, std::move(targets));
  for (bool done = false; !done;)
    self->receive([&](wave_atom, get_reply& part) { consume(part); },
                  [&](get_reply& rest) {
                    consume(rest);
                    done = true;
                  },
                  caf::after(batch_deadline()) >> [&] { done = true; });
  for (std::size_t k = 0; k < keys.size(); ++k)
    if (!answered[k]) take(k, {{key_error::timeout, 0}, 0, 0});
}

std::vector<key_status> node::get_batch_into(const std::vector<std::string>& keys,
                                             const std::vector<std::span<std::byte>>& buffers,
                                             std::vector<std::size_t>& sizes) {
  if (buffers.size() != keys.size())
    throw std::invalid_argument("get_batch_into: " + std::to_string(keys.size()) +
                                " keys but " + std::to_string(buffers.size()) + " buffers");
  auto& i = *impl_;
  std::vector<read_target> targets(keys.size());
  {
    std::lock_guard guard{i.memory_lock};
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const auto address = reinterpret_cast<std::uint64_t>(buffers[k].data());
      targets[k] = {address, buffers[k].size(),
                    i.memory->slot_of(address, buffers[k].size()).value_or(no_slot)};
    }
  }
  std::vector<key_status> statuses(keys.size());
  sizes.assign(keys.size(), 0);
  // The batch says too_large, with the size, for a buffer too small.
  i.copy_batch(keys, std::move(targets), [&](std::size_t k, const get_item& item) {
    statuses[k] = item.status;
    sizes[k] = item.size;
    if (!item.status.ok() || item.address == reinterpret_cast<std::uint64_t>(buffers[k].data()))
      return;  // nothing to copy: it landed in place
    std::memcpy(buffers[k].data(), reinterpret_cast<const void*>(item.address), item.size);
  });
  return statuses;
}

void node::register_memory(void* base, std::uint64_t length) {
  auto& i = *impl_;
  std::lock_guard guard{i.memory_lock};
  if (!i.system) throw std::runtime_error("the node is stopped");
  for (const auto& p : i.memory->add(reinterpret_cast<std::uint64_t>(base), length))
    caf::anon_send(i.registrar, caf::add_atom_v, p.slot, p.address, p.size);
}

void node::unregister_memory(void* base) {
  auto& i = *impl_;
  // Held until answered, so that the slots are taken by another region only once no
  // reader holds this one.
  std::lock_guard guard{i.memory_lock};
  const auto pieces = i.memory->remove(reinterpret_cast<std::uint64_t>(base));
  if (!i.system) return;  // no ring is left to hold it
  for (const auto& p : pieces) i.ask<caf::ok_atom>(i.registrar, caf::delete_atom_v, p.slot);
}

std::vector<read_value> node::read_values(const std::vector<std::string>& keys) {
  std::vector<read_value> out(keys.size());
  impl_->copy_batch(keys, {}, [&](std::size_t k, const get_item& item) {
    out[k].status = item.status;
    if (item.status.ok()) out[k].value.assign(reinterpret_cast<const char*>(item.address), item.size);
  });
  return out;
}

std::vector<std::uint8_t> node::exists(const std::vector<std::string>& keys) {
  return impl_->ask<std::vector<std::uint8_t>>(impl_->catalog, exists_atom_v, keys);
}

std::uint64_t node::remove(const std::vector<std::string>& keys) {
  return impl_->ask<std::uint64_t>(impl_->writer, caf::delete_atom_v, keys);
}

void node::on_evicted(std::function<void(std::vector<std::string>)> callback) {
  auto& i = *impl_;
  if (!i.system) throw std::runtime_error("the node is stopped");
  auto listener = i.system->spawn<caf::detached>(eviction_callback, std::move(callback));
  caf::anon_send(i.catalog, caf::subscribe_atom_v, listener);
  i.listeners.push_back(caf::actor_cast<caf::actor>(listener));
}

node_stats node::stats() { return impl_->ask<node_stats>(impl_->supervisor, stats_atom_v); }

catalog_stats node::store_stats() {
  return impl_->ask<catalog_stats>(impl_->catalog, stats_atom_v);
}

arena_stats node::read_stats() { return impl_->ask<arena_stats>(impl_->arena, stats_atom_v); }

segment_descriptor node::register_segment(void* base, std::uint64_t length,
                                          segment_export exported) {
  if (!impl_->transfer) throw std::runtime_error("the node is stopped");
  return impl_->transfer->register_segment(base, length, std::move(exported));
}

segment_descriptor node::register_segment(void* base, std::uint64_t length) {
  return register_segment(base, length, segment_export{});
}

bool node::unregister_segment(std::uint64_t id) {
  if (!impl_->transfer) throw std::runtime_error("the node is stopped");
  return impl_->transfer->unregister_segment(id);
}

std::string node::transfer_identity() {
  if (!impl_->transfer) throw std::runtime_error("the node is stopped");
  return impl_->transfer->identity();
}

std::uint16_t node::transfer_port() {
  if (!impl_->transfer) throw std::runtime_error("the node is stopped");
  return impl_->transfer->control_port();
}

transfer_peer node::connect_peer(const std::string& host, std::uint16_t transfer_port) {
  if (!impl_->transfer) throw std::runtime_error("the node is stopped");
  return impl_->transfer->connect(host, transfer_port);
}

std::future<std::vector<transfer_status>> node::transfer(const transfer_peer& peer,
                                                         std::vector<transfer_request> requests) {
  if (impl_->transfer) return impl_->transfer->submit(peer, std::move(requests));
  std::promise<std::vector<transfer_status>> stopped;
  stopped.set_value(std::vector<transfer_status>(requests.size(),
                                                 {transfer_error::unavailable, 0}));
  return stopped.get_future();
}

}  // namespace spillway
