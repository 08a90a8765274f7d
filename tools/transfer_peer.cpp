// `spillway transfer-peer`: a process that owns one zeroed segment and serves it over
// the tcp transport, for the two-process tcp tests and `bench transfer`. Its transfer
// host (descriptors, checksums) is published through CAF's middleman; once both ports
// are open it writes one line to stderr:
//
//   transfer-peer ready control=PORT data=PORT segment=ID
//
// then serves until SIGINT or SIGTERM. The fault flags make the tcp server drop one
// lane, or SIGKILL this process, after that many slices.
#include <sys/mman.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>
#include <pthread.h>

#include "actors/transport_host.hpp"
#include "messages/type_ids.hpp"
#include "runtime/tcp_server.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

// Anonymous memory, touched once so that the transfers do not pay the page faults.
std::shared_ptr<std::byte> map_segment(std::uint64_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("transfer-peer: mmap of the segment failed");
  ::madvise(p, size, MADV_HUGEPAGE);
  std::memset(p, 0, size);
  return {static_cast<std::byte*>(p), [size](std::byte* q) { ::munmap(q, size); }};
}

int wait_for_stop_signal(const sigset_t& stop_signals) {
  int signal = 0;
  sigwait(&stop_signals, &signal);
  return signal;
}

}  // namespace

int run_transfer_peer(const transfer_peer_options& options) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before any thread starts

  const auto memory = map_segment(options.segment_size);
  auto segments = std::make_shared<segment_table>();
  const auto segment = segments->add(memory.get(), options.segment_size);
  tcp_server server{segments, options.host, 0, {options.drop_lane_after, options.kill_after}};

  caf::actor_system_config config;
  config.load<caf::io::middleman>();
  register_message_types(config);
  caf::actor_system system{config};
  auto host = spawn_transport_host(system, segments, server.port());
  auto control = system.middleman().publish(host, 0, options.host.c_str());
  if (!control) {
    std::cerr << "transfer-peer: cannot publish: " << system.render(control.error()) << "\n";
    caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::cerr << "transfer-peer ready control=" << *control << " data=" << server.port()
            << " segment=" << segment.id << std::endl;
  wait_for_stop_signal(stop_signals);
  caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace spillway
