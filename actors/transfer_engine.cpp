// The engine behind node::register_segment, connect_peer and transfer. A batch goes to
// the route's next slicer with send_as from a hidden receiver that monitors the
// slicer: the reply fulfils the caller's future, and a slicer killed before it answers
// fails the batch as `unavailable` instead of leaving the future hanging. A slicer that
// is stopped answers every batch itself, once no lane holds any of its memory.
#include "actors/transfer_engine.hpp"

#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/exit_guard.hpp"
#include "actors/rdma_host.hpp"
#include "actors/transport_host.hpp"
#include "config/endpoint.hpp"
#include "runtime/block_settings.hpp"

namespace spillway {
namespace {

std::vector<transfer_status> all_unavailable(std::size_t n) {
  return std::vector<transfer_status>(n, {transfer_error::unavailable, 0});
}

// The caller's future, settled once: with the slicer's statuses, or, when the receiver
// goes without them (its slicer killed, or the actor system torn down before the
// receiver ran), `unavailable` for all rather than a broken promise.
class batch_answer {
public:
  explicit batch_answer(std::size_t n) : n_(n) {}
  batch_answer(const batch_answer&) = delete;
  batch_answer& operator=(const batch_answer&) = delete;
  ~batch_answer() {
    if (!settled_) settle(all_unavailable(n_));
  }

  std::future<std::vector<transfer_status>> future() { return promise_.get_future(); }
  void settle(std::vector<transfer_status> statuses) {
    settled_ = true;
    promise_.set_value(std::move(statuses));
  }

private:
  std::size_t n_;
  bool settled_ = false;
  std::promise<std::vector<transfer_status>> promise_;
};

caf::behavior batch_receiver(caf::event_based_actor* self, std::shared_ptr<batch_answer> answer,
                             const slicer_actor& slicer) {
  self->monitor(slicer);
  self->set_down_handler([self](caf::down_msg&) { self->quit(); });  // answer's dtor settles
  return {
    [self, answer](transfer_reply& reply) {
      answer->settle(std::move(reply.statuses));
      self->quit();
    },
  };
}

void add_to(transfer_stats& sum, const transfer_stats& one) {
  sum.bytes_written += one.bytes_written;
  sum.bytes_read += one.bytes_read;
  sum.slices += one.slices;
  sum.slices_retried += one.slices_retried;
  for (std::size_t e = 0; e < transfer_error_count; ++e) {
    sum.requests[e] += one.requests[e];
    sum.slice_failures[e] += one.slice_failures[e];
  }
  sum.lanes_lost += one.lanes_lost;
}

}  // namespace

transfer_engine::transfer_engine(caf::actor_system& system, transfer_section transfer,
                                 fault_section faults)
    : system_(system),
      transfer_(std::move(transfer)),
      faults_(std::move(faults)),
      segments_(std::make_shared<segment_table>(transfer_identity(system))) {}

transfer_engine::~transfer_engine() { stop(); }

// The tcp server binds transfer.listen; the transfer host goes on the same host, on
// transfer.control_port (0: a free one, which peers learn from control_port()). For
// rdma the devices open here, and an rdma host answers the handshakes that reach the
// transfer host.
void transfer_engine::start_services() {
  if (stopped_) throw std::runtime_error("transfer: the node is stopped");
  if (host_) return;
  const auto where = parse_endpoint(transfer_.listen);  // validated by the config loader
  std::uint16_t data_port = 0;
  if (transfer_.transport == "tcp") {
    try {
      server_ = std::make_unique<tcp_server>(segments_, admission_, where->host, where->port,
                                             tcp_faults(faults_), tcp_limits(transfer_));
    } catch (const std::exception& e) {
      throw std::runtime_error("transfer.listen = \"" + transfer_.listen +
                               "\": cannot listen: " + e.what());
    }
    data_port = server_->port();
  }
  if (transfer_.transport == "rdma" && !domain_) {  // kept when publishing failed
    domain_ = std::make_shared<rdma_domain>(rdma_settings(transfer_));  // rdma_setup_error
    rdma_host_ = spawn_rdma_host(system_, domain_, segments_);
  }
  auto host = spawn_transport_host(system_, {segments_, admission_, data_port, rdma_host_});
  const auto wanted = static_cast<std::uint16_t>(transfer_.control_port);  // <= 65535
  try {
    listener_ = publish_transfer_host(system_, host, where->host, wanted);
  } catch (const std::runtime_error& e) {
    stop_exit_guard(caf::actor_cast<caf::actor>(host));
    server_.reset();  // a later call starts both again
    throw std::runtime_error("transfer.control_port = " + std::to_string(wanted) +
                             ": cannot publish the transfer host on " + where->host + ": " +
                             e.what());
  }
  host_ = std::move(host);
  control_port_ = listener_.port();
}

segment_descriptor transfer_engine::register_segment(void* base, std::uint64_t length,
                                                     segment_export exported) {
  std::lock_guard lock{mutex_};
  start_services();
  auto* bytes = static_cast<std::byte*>(base);
  // Registered before it is listed, so that any segment a peer sees has its rkeys.
  const bool writable = exported.access == segment_access::read_write;
  const auto rkey = domain_ ? domain_->register_memory(bytes, length, writable) : 0;
  return segments_->add(bytes, length, std::move(exported), rkey);
}

// Waits without the lock for the lanes moving the segment's bytes to finish a frame;
// for rdma its memory regions go too, so that a peer's rkey stops working.
bool transfer_engine::unregister_segment(std::uint64_t id) {
  std::shared_ptr<rdma_domain> domain;
  segment_descriptor withdrawn;
  {
    std::lock_guard lock{mutex_};
    domain = domain_;
    for (const auto& d : segments_->list())
      if (d.id == id) withdrawn = d;
  }
  if (!segments_->remove(id)) return false;
  if (domain)
    domain->deregister_memory(reinterpret_cast<const std::byte*>(withdrawn.base),
                              withdrawn.length);
  return true;
}

std::string transfer_engine::identity() const { return segments_->owner(); }

std::uint16_t transfer_engine::control_port() {
  std::lock_guard lock{mutex_};
  start_services();
  return control_port_;
}

// The peer's answers (its transfer host, its descriptors, a new route's lanes) are
// waited for without the lock: a slow or silent peer holds up only its own caller,
// never the submits and connects to others.
transfer_peer transfer_engine::connect(const std::string& host, std::uint16_t control_port) {
  const auto peer = host + ":" + std::to_string(control_port);
  std::optional<std::uint32_t> known;
  std::shared_ptr<const rdma_domain> domain;  // rdma: read under the lock, which stop() resets
  {
    std::lock_guard lock{mutex_};
    start_services();
    domain = domain_;
    if (auto named = route_of_peer_.find(peer); named != route_of_peer_.end())
      known = named->second;
  }
  if (!known) {
    // One route a peer, however it is named: CAF knows an actor by its node and id, so
    // "localhost" and "127.0.0.1" give the same transfer host, and the second name
    // joins the first's route instead of opening a second set of lanes.
    const auto reached = remote_transfer_host(system_, host, control_port);
    std::lock_guard lock{mutex_};
    known = route_to(reached, peer);
  }
  if (known) return refresh(*known);
  auto opened = open_route(host, control_port, std::move(domain));
  std::lock_guard lock{mutex_};
  if (stopped_) {
    close_route(opened);
    throw std::runtime_error("transfer: the node is stopped");
  }
  if (const auto raced = route_to(opened.host, peer)) {  // a concurrent connect was first
    close_route(opened);
    refresh_route(routes_[*raced], std::move(opened.peer));  // its descriptors are fresh
    return {*raced, routes_[*raced].peer.segments, transfer_identity_of(routes_[*raced].host)};
  }
  routes_.push_back(std::move(opened));
  const auto index = static_cast<std::uint32_t>(routes_.size() - 1);
  route_of_peer_.emplace(peer, index);
  return {index, routes_.back().peer.segments, transfer_identity_of(routes_.back().host)};
}

std::optional<std::uint32_t> transfer_engine::route_to(const transfer_host_actor& host,
                                                       const std::string& name) {
  for (std::uint32_t i = 0; i < routes_.size(); ++i)
    if (routes_[i].host && routes_[i].host.address() == host.address()) {
      route_of_peer_.emplace(name, i);
      return i;
    }
  return std::nullopt;
}

transfer_peer transfer_engine::refresh(std::uint32_t index) {
  transfer_host_actor host;
  {
    std::lock_guard lock{mutex_};
    if (stopped_) throw std::runtime_error("transfer: the node is stopped");
    host = routes_[index].host;
  }
  auto info = describe_peer(system_, transfer_, host);
  std::lock_guard lock{mutex_};
  if (stopped_) throw std::runtime_error("transfer: the node is stopped");
  auto& route = routes_[index];
  refresh_route(route, std::move(info));
  return {index, route.peer.segments, transfer_identity_of(route.host)};
}

transfer_route transfer_engine::open_route(const std::string& host, std::uint16_t control_port,
                                           std::shared_ptr<const rdma_domain> domain) {
  if (transfer_.transport == "local")
    return open_local_peer_route(system_, transfer_, host, control_port);
  if (transfer_.transport == "tcp") return open_tcp_route(system_, transfer_, host, control_port);
  return open_rdma_route(system_, transfer_, host, control_port, std::move(domain));
}

slicer_actor transfer_engine::slicer_for(const transfer_peer& peer) {
  std::lock_guard lock{mutex_};
  if (stopped_ || peer.route >= routes_.size()) return {};
  return routes_[peer.route].pick();
}

std::future<std::vector<transfer_status>> transfer_engine::submit(
  const transfer_peer& peer, std::vector<transfer_request> requests) {
  auto answer = std::make_shared<batch_answer>(requests.size());
  auto result = answer->future();
  auto slicer = slicer_for(peer);
  if (!slicer) return result;  // answer's dtor settles it as unavailable
  // Hidden: a stopping node does not wait for it; its slicer answers it first.
  auto receiver = system_.spawn<caf::hidden>(batch_receiver, std::move(answer), slicer);
  caf::send_as(receiver, slicer, transfer_atom_v, transfer_batch(std::move(requests)));
  return result;
}

// The slicers are asked without the lock, as a peer is: a busy one holds up only the
// scrape. The server's figures are its atomics, read under the lock that stop() resets it
// under.
transfer_stats transfer_engine::stats() {
  transfer_stats sum;
  std::vector<slicer_actor> slicers;
  {
    std::lock_guard lock{mutex_};
    for (const auto& route : routes_)
      slicers.insert(slicers.end(), route.slicers.begin(), route.slicers.end());
    if (server_) {
      sum.refused_frames = server_->refused_frames();
      sum.accept_failures = server_->accept_failures();
      sum.dropped_lanes = server_->dropped_lanes();
      sum.refused_lanes = server_->refused_lanes();
      sum.capped_lanes = server_->capped_lanes();
      sum.timed_out_lanes = server_->timed_out_lanes();
    }
  }
  caf::scoped_actor self{system_};
  for (const auto& slicer : slicers) {
    caf::error failure;
    self->request(slicer, std::chrono::milliseconds{transfer_.slice_timeout_ms}, stats_atom_v)
      .receive([&](transfer_stats& one) { add_to(sum, one); },
               [&](caf::error& err) { failure = std::move(err); });
    if (failure) throw std::runtime_error("transfer stats: " + system_.render(failure));
  }
  return sum;
}

void transfer_engine::stop() {
  std::lock_guard lock{mutex_};
  if (stopped_) return;
  stopped_ = true;
  for (auto& route : routes_) close_route(route);
  routes_.clear();
  route_of_peer_.clear();
  listener_.stop();  // frees the port now
  if (host_) stop_exit_guard(caf::actor_cast<caf::actor>(host_));
  host_ = nullptr;
  if (rdma_host_) caf::anon_send_exit(rdma_host_, caf::exit_reason::user_shutdown);
  rdma_host_ = nullptr;
  domain_.reset();  // its last QP actor closes the devices
  server_.reset();  // shuts its sessions down and joins their threads
}

}  // namespace spillway
