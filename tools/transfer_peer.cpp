// `spillway transfer-peer`: a process that owns one zeroed segment and serves it over
// the tcp transport, for the two-process tcp tests and `bench transfer`. Its transfer
// host (descriptors, checksums, lane tickets) is published through CAF's middleman;
// once its ports are open it writes one line to stderr (stream: a plain TCP sink, the
// bench's limit):
//
//   transfer-peer ready control=PORT data=PORT segment=ID stream=PORT read_only=ID
//
// The segment is exported read-write to the identities given with --export-to, and a
// second one (read_only, 64 KiB) read-only to them: the security tests' targets.
// then serves until SIGINT or SIGTERM. From the node config (-c): its transfer host is
// published on transfer.control_port (0, the default: a free one), and the [fault]
// section's tcp keys make the tcp server drop one lane, or SIGKILL this process, after
// that many slices. Its data and stream ports are always free ones.
#include <sys/mman.h>
#include <sys/socket.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>
#include <pthread.h>

#include "actors/exit_guard.hpp"
#include "actors/transport_host.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/block_settings.hpp"
#include "runtime/log.hpp"
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

// The bench's limit: one plain TCP stream, no frames. Each connection sends a u64
// length and that many bytes, which land at the start of the segment; one byte back
// says they are all in.
void sink_streams(int listener, std::byte* segment, std::uint64_t size) {
  for (;;) {
    const auto connection = accept_tcp(listener);
    if (!connection) return;  // the listener was shut down
    std::uint64_t length = 0;
    const char done = 1;
    if (recv_all(connection.get(), &length, sizeof length) && length <= size &&
        recv_all(connection.get(), segment, length))
      send_all(connection.get(), &done, 1);
  }
}

int wait_for_stop_signal(const sigset_t& stop_signals) {
  int signal = 0;
  sigwait(&stop_signals, &signal);
  return signal;
}

}  // namespace

int run_transfer_peer(const node_config& settings, const transfer_peer_options& options) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before any thread starts

  // Refused lanes and frames are logged, within a budget, on stderr after the ready line.
  configure_logging(settings.node.log_level, settings.node.log_format);
  const auto memory = map_segment(options.segment_size);
  constexpr std::uint64_t read_only_size = 64 << 10;
  const auto read_only_memory = map_segment(read_only_size);
  auto segments = std::make_shared<segment_table>();
  const auto segment = segments->add(memory.get(), options.segment_size,
                                     segment_export::to(options.export_to));
  const auto read_only = segments->add(read_only_memory.get(), read_only_size,
                                       segment_export::to(options.export_to, segment_access::read_only));
  auto admission = std::make_shared<lane_admission>();
  tcp_server server{segments, admission, options.host, 0, tcp_faults(settings.fault),
                    tcp_limits(settings.transfer)};

  const auto stream_listener = listen_tcp(options.host, 0);
  std::thread sink{sink_streams, stream_listener.get(), memory.get(), options.segment_size};

  caf::actor_system_config config;
  configure_actor_system(config, settings.node.scheduler_threads);
  caf::actor_system system{config};
  auto host = spawn_transport_host(system, {segments, admission, server.port(), {}});
  const auto control_port = static_cast<std::uint16_t>(settings.transfer.control_port);
  auto control = system.middleman().publish(host, control_port, options.host.c_str());
  if (!control) {
    std::cerr << "transfer-peer: transfer.control_port = " << control_port
              << ": cannot publish: " << system.render(control.error()) << "\n";
    std::_Exit(1);  // the sink thread is still in accept()
  }
  // One write: readers wait for the first word and then parse the whole line.
  std::cerr << "transfer-peer ready control=" + std::to_string(*control) +
                 " data=" + std::to_string(server.port()) +
                 " segment=" + std::to_string(segment.id) +
                 " stream=" + std::to_string(local_port(stream_listener.get())) +
                 " read_only=" + std::to_string(read_only.id) + "\n";
  wait_for_stop_signal(stop_signals);
  stop_exit_guard(caf::actor_cast<caf::actor>(host));
  ::shutdown(stream_listener.get(), SHUT_RDWR);
  sink.join();
  return 0;
}

}  // namespace spillway
