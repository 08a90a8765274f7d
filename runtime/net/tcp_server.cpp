#include "runtime/net/tcp_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <spdlog/spdlog.h>

#include "runtime/net/tcp_session.hpp"

namespace spillway {
namespace {

// How long the acceptor waits after an accept failed for want of descriptors.
constexpr std::chrono::milliseconds accept_pause{100};

}  // namespace

tcp_server::tcp_server(std::shared_ptr<const segment_table> segments, const std::string& host,
                       std::uint16_t port, const tcp_server_faults& faults)
    : segments_(std::move(segments)),
      faults_(faults),
      listener_(listen_tcp(host, port)) {
  port_ = local_port(listener_.get());
  acceptor_ = std::thread([this] { accept_loop(); });
}

tcp_server::~tcp_server() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);  // wakes accept()
    for (auto& s : sessions_)
      if (s.fd) ::shutdown(s.fd.get(), SHUT_RDWR);  // wakes their recv()
  }
  woken_.notify_all();  // an acceptor pausing after a failed accept
  acceptor_.join();
  for (auto& s : sessions_) s.thread.join();
}

void tcp_server::accept_loop() {
  for (;;) {
    unique_fd fd = accept_tcp(listener_.get());
    const int error = fd ? 0 : errno;
    std::unique_lock lock{mutex_};
    if (stopping_) return;
    if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
      // The connection stays queued, so accept would fail again at once: pause instead
      // of spinning a core until descriptors or memory come back.
      if (accept_failures_++ == 0)
        spdlog::warn("tcp server on port {}: accept failed: {}; retrying every {} ms", port_,
                     std::strerror(error), accept_pause.count());
      woken_.wait_for(lock, accept_pause, [this] { return stopping_; });
      continue;
    }
    if (!fd) continue;  // a peer that gave up while queued: keep serving the rest
    sessions_.remove_if([](session& s) {  // reap the finished ones
      if (s.fd) return false;
      s.thread.join();
      return true;
    });
    auto& s = sessions_.emplace_back();
    s.fd = std::move(fd);
    s.thread = std::thread([this, &s] { serve(s); });
  }
}

void tcp_server::serve(session& s) {
  if (serve_tcp_session(s.fd.get(), *segments_, [this] { return after_slice(); }) !=
      transfer_error::none)
    ++refused_frames_;
  std::lock_guard lock{mutex_};
  s.fd.reset();
}

bool tcp_server::after_slice() {
  const auto served = ++served_;
  if (served == faults_.kill_after_slices) ::kill(::getpid(), SIGKILL);
  if (served != faults_.drop_lane_after_slices) return true;
  ++dropped_lanes_;
  return false;
}

}  // namespace spillway
