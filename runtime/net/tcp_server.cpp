#include "runtime/net/tcp_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

#include <spdlog/spdlog.h>

namespace spillway {
namespace {

// How long the acceptor waits after an accept failed for want of descriptors.
constexpr std::chrono::milliseconds accept_pause{100};

// The peer's address without its port: what the per-peer cap counts by.
std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "?";
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, text,
                sizeof text);
  else
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, text, sizeof text);
  return text;
}

// A send that makes no progress for a frame's timeout fails, so a peer that stops
// reading cannot hold its session's thread.
void bound_sends(int fd, std::chrono::milliseconds timeout) {
  timeval t{static_cast<time_t>(timeout.count() / 1000),
            static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

}  // namespace

tcp_server::tcp_server(std::shared_ptr<const segment_table> segments,
                       std::shared_ptr<const lane_admission> admission, const std::string& host,
                       std::uint16_t port, const tcp_server_faults& faults,
                       const tcp_server_limits& limits)
    : segments_(std::move(segments)),
      admission_(std::move(admission)),
      faults_(faults),
      limits_(limits),
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
  for (auto& s : sessions_)
    if (s.thread.joinable()) s.thread.join();
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
      if (s.thread.joinable()) s.thread.join();
      return true;
    });
    const auto address = peer_address(fd.get());
    if (!admit_connection(std::move(fd), address)) continue;
  }
}

// Closes `fd` at once when a cap is reached, or when no thread can be made for it
// (pids.max, ulimit -u): the embedding process must not die of std::terminate.
bool tcp_server::admit_connection(unique_fd fd, const std::string& address) {
  std::uint64_t suppressed = 0;
  auto& of_peer = lanes_of_[address];
  if (open_ >= limits_.max_lanes || of_peer >= limits_.max_lanes_per_peer) {
    ++capped_lanes_;
    if (log_budget_.allow(suppressed))
      spdlog::warn("tcp server on port {}: refused a lane from {}: {} lanes open ({} from it), "
                   "transfer.max_lanes = {}, transfer.max_lanes_per_peer = {}{}",
                   port_, address, open_, of_peer, limits_.max_lanes,
                   limits_.max_lanes_per_peer,
                   suppressed ? fmt::format(" ({} similar lines left out)", suppressed) : "");
    if (of_peer == 0) lanes_of_.erase(address);
    return false;
  }
  bound_sends(fd.get(), limits_.session.frame_timeout);
  auto& s = sessions_.emplace_back();
  s.fd = std::move(fd);
  s.address = address;
  try {
    s.thread = std::thread([this, &s] { serve(s); });
  } catch (const std::system_error& e) {
    ++accept_failures_;
    if (log_budget_.allow(suppressed))
      spdlog::warn("tcp server on port {}: refused a lane from {}: no thread for it: {}", port_,
                   address, e.what());
    sessions_.pop_back();  // closes the connection
    if (of_peer == 0) lanes_of_.erase(address);
    return false;
  }
  ++of_peer;
  ++open_;
  return true;
}

void tcp_server::serve(session& s) {
  const auto result = serve_tcp_session(s.fd.get(), *segments_, *admission_, limits_.session,
                                        [this] { return after_slice(); },
                                        [this](transfer_error) { ++refused_frames_; });
  report(s, result);
  std::lock_guard lock{mutex_};
  s.fd.reset();
  --open_;
  if (auto it = lanes_of_.find(s.address); it != lanes_of_.end() && --it->second == 0)
    lanes_of_.erase(it);
}

// Every refusal is counted; its log line is written within the log budget, so a flood
// of them costs a counter each, not disk.
void tcp_server::report(const session& s, const session_result& result) {
  const char* what = nullptr;
  std::string why;
  switch (result.end) {
    case session_end::closed:
    case session_end::stopped: return;
    case session_end::refused_frame:  // counted before its status went out
      what = "closed a lane";
      why = std::string{"refused a frame: "} + name_of(result.error);
      break;
    case session_end::not_admitted:
      ++refused_lanes_;
      what = "refused a lane";
      why = std::string{"not admitted: "} + result.reason;
      break;
    case session_end::idle_timeout:
    case session_end::frame_timeout:
      ++timed_out_lanes_;
      what = "closed a lane";
      why = result.end == session_end::idle_timeout
              ? "idle past transfer.lane_idle_timeout_ms"
              : "a frame unfinished past transfer.frame_timeout_ms";
      break;
  }
  std::uint64_t suppressed = 0;
  if (!log_budget_.allow(suppressed)) return;
  // An idle lane closed is routine (its requester reconnects when it needs it again).
  const auto level =
    result.end == session_end::idle_timeout ? spdlog::level::info : spdlog::level::warn;
  spdlog::log(level, "tcp server on port {}: {} from {}{}: {}{}", port_, what, s.address,
              result.peer.empty() ? "" : " (peer " + result.peer + ")", why,
              suppressed ? fmt::format(" ({} similar lines left out)", suppressed) : "");
}

bool tcp_server::after_slice() {
  const auto served = ++served_;
  if (served == faults_.kill_after_slices) ::kill(::getpid(), SIGKILL);
  if (served != faults_.drop_lane_after_slices) return true;
  ++dropped_lanes_;
  return false;
}

}  // namespace spillway
