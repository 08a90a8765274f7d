// Bootstrap and shutdown of a node. Shutdown is the part that must never hang: the
// supervisor forwards its exit message to every actor it started, detached readers
// included, and each of them handles it (STACK.md 2.7, 2.9).
#include "runtime/node.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/reader.hpp"
#include "actors/supervisor.hpp"
#include "config/endpoint.hpp"
#include "messages/node.hpp"
#include "runtime/log.hpp"
#include "runtime/rdma_devices.hpp"

namespace spillway {

struct node::impl {
  node_config config;
  caf::actor_system_config caf_config;  // outlives the system, which keeps a reference
  std::unique_ptr<caf::actor_system> system;
  node_actor supervisor;
  std::uint16_t port = 0;
};

namespace {

// Asking for RDMA where there is none is an error, never a quiet switch to tcp.
void check_transport(const transfer_section& transfer) {
  if (transfer.transport != "rdma") return;
  const auto devices = list_rdma_devices();
  if (devices.names.empty())
    throw startup_error("transfer.transport = \"rdma\", but this machine has no RDMA device "
                        "(ibv_get_device_list: " +
                        std::string{devices.list_errno ? strerrorname_np(devices.list_errno) : "no device"} +
                        "); set transfer.transport = \"tcp\"");
}

void prepare_data_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw startup_error("storage.data_dir = \"" + dir.string() + "\": cannot create: " +
                        ec.message());
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
  configure_logging(config.node.log_level);
  check_transport(config.transfer);
  prepare_data_dir(config.storage.data_dir);
  impl_->config = std::move(config);
  configure_actor_system(impl_->caf_config, impl_->config);
  impl_->system = std::make_unique<caf::actor_system>(impl_->caf_config);
  const read_section read = impl_->config.read;
  impl_->supervisor = spawn_supervisor(
    *impl_->system, impl_->config, [read](caf::actor_system& system, std::uint32_t index) {
      return spawn_reader(system, index, read);
    });
  try {
    if (!impl_->config.node.listen.empty())
      impl_->port = publish(*impl_->system, impl_->supervisor, impl_->config.node.listen);
  } catch (...) {
    stop();  // the actors are running: a throwing constructor must not leave them so
    throw;
  }
  spdlog::info("node {} started: {} readers, data dir {}{}", impl_->config.node.id,
               impl_->config.read.readers, impl_->config.storage.data_dir,
               impl_->port ? ", listening on port " + std::to_string(impl_->port) : "");
}

node::~node() { stop(); }

void node::stop() {
  if (!impl_->system) return;
  caf::anon_send_exit(impl_->supervisor, caf::exit_reason::user_shutdown);
  impl_->supervisor = nullptr;
  impl_->system->await_all_actors_done();
  impl_->system.reset();
  spdlog::info("node {} stopped", impl_->config.node.id);
}

const node_config& node::config() const { return impl_->config; }

std::uint16_t node::listen_port() const { return impl_->port; }

node_stats node::stats() {
  if (!impl_->system) throw std::runtime_error("node is stopped");
  caf::scoped_actor self{*impl_->system};
  node_stats result;
  const std::chrono::milliseconds timeout{impl_->config.cluster.request_timeout_ms};
  self->request(impl_->supervisor, timeout, stats_atom_v)
    .receive([&](node_stats& s) { result = std::move(s); },
             [&](caf::error& err) {
               throw std::runtime_error("node stats: " + impl_->system->render(err));
             });
  return result;
}

}  // namespace spillway
