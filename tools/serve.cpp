// `spillway serve`: a node as a service. SIGINT and SIGTERM are taken synchronously
// through a signalfd rather than by a handler, so stopping runs in plain code. The first
// one drains the node (node::drain) and stops it, exit 0; a second one, or
// node.stop_timeout_ms passing first, forces the stop: exit 1, the reason in the log.
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/node.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

const char* name_of(std::uint32_t signal) { return sigabbrev_np(static_cast<int>(signal)); }

// The requests still in flight are dropped; what was acknowledged is in sealed buckets.
[[noreturn]] void force_stop(const std::string& reason) {
  spdlog::error("forced stop: {}; requests still in flight are dropped", reason);
  spdlog::default_logger()->flush();
  std::_Exit(1);
}

std::uint32_t take_signal(int signals) {
  signalfd_siginfo info{};
  if (::read(signals, &info, sizeof info) != sizeof info)
    force_stop(std::string{"reading the signalfd: "} + std::strerror(errno));
  return info.ssi_signo;
}

}  // namespace

int run_serve(const node_config& config) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // Blocked before the node starts its threads, which inherit the mask: the signals
  // can then only be taken here, from the signalfd.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int signals = ::signalfd(-1, &stop_signals, SFD_CLOEXEC);
  const int stopped = ::eventfd(0, EFD_CLOEXEC);
  if (signals < 0 || stopped < 0) {
    spdlog::error("serve: signalfd or eventfd: {}", std::strerror(errno));
    return 1;
  }
  node serving{config};
  spdlog::info("serving; SIGINT or SIGTERM stops the node");
  const auto first = take_signal(signals);
  const auto limit = config.node.stop_timeout_ms;
  spdlog::info("SIG{} received, stopping: the requests in flight finish within "
               "node.stop_timeout_ms = {}; SIG{} again forces the stop",
               name_of(first), limit, name_of(first));

  // stop() stays on this thread, as the node was made here (CAF's actor system did not
  // finish its destructor when it ran on another); the watch forces the stop.
  std::thread watch{[&] {
    pollfd waits[] = {{stopped, POLLIN, 0}, {signals, POLLIN, 0}};
    const int ready = ::poll(waits, 2, static_cast<int>(limit));
    if (ready > 0 && (waits[1].revents & POLLIN))
      force_stop(std::string{"SIG"} + name_of(take_signal(signals)) + " while stopping");
    if (ready <= 0) force_stop("node.stop_timeout_ms = " + std::to_string(limit) + " passed");
  }};
  if (!serving.drain()) force_stop("the node could not be drained");
  serving.stop();
  const std::uint64_t one = 1;
  (void)!::write(stopped, &one, sizeof one);
  watch.join();
  return 0;
}

}  // namespace spillway
