// `spillway serve`: a node as a service. SIGINT and SIGTERM are taken synchronously
// with sigwait rather than by a handler, so stopping runs in plain code.
#include <csignal>
#include <cstring>

#include <pthread.h>
#include <spdlog/spdlog.h>

#include "runtime/node.hpp"
#include "tools/commands.hpp"

namespace spillway {

int run_serve(const node_config& config) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // Blocked before the node starts its threads, which inherit the mask: the
  // signal can then only be taken here, by sigwait.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  node serving{config};
  spdlog::info("serving; SIGINT or SIGTERM stops the node");
  int signal = 0;
  sigwait(&stop_signals, &signal);
  spdlog::info("SIG{} received, stopping", sigabbrev_np(signal));
  serving.stop();
  return 0;
}

}  // namespace spillway
