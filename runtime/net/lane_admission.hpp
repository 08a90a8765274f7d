// Who may open a tcp lane: the peers this owner handed a ticket to over its control
// channel (the transfer host's `describe`). A ticket is a route id and 32 random bytes,
// one per peer identity; a lane's first frame is a `hello` carrying it, checked in
// constant time before any other frame is read. A lane without one is closed. The
// secret is only as private as the control channel that carries it: TLS off loopback.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spillway {

constexpr std::size_t lane_secret_size = 32;

struct lane_ticket {
  std::uint64_t route = 0;  // 0: no ticket
  std::string secret;       // lane_secret_size random bytes
};

class lane_admission {
public:
  // The ticket of `peer`'s route: issued on its first describe, the same ever after
  // (its lanes reconnect with it). Throws std::runtime_error when the kernel has no
  // randomness to give.
  lane_ticket issue(const std::string& peer);

  // The identity the ticket names, when `secret` is its route's, or nothing.
  std::optional<std::string> admit(std::uint64_t route, const std::byte* secret,
                                   std::size_t size) const;

  // Whether `peer` was handed a ticket.
  bool admitted(std::string_view peer) const;

private:
  struct route {
    std::string peer;
    std::array<std::byte, lane_secret_size> secret;
  };

  mutable std::mutex mutex_;
  std::vector<route> routes_;  // by route id - 1
};

// A budget of log lines, so that a flood of refused connections cannot fill the disk:
// `per_window` lines each `window`, then silence and a count of what was left out.
class log_budget {
public:
  log_budget(std::uint32_t per_window, std::chrono::milliseconds window)
      : per_window_(per_window), window_(window) {}

  // Whether this line may be written; `suppressed` is set to the lines left out since
  // the last one that was (0 most of the time).
  bool allow(std::uint64_t& suppressed);

private:
  std::mutex mutex_;
  std::uint32_t per_window_;
  std::chrono::milliseconds window_;
  std::chrono::steady_clock::time_point window_start_{};
  std::uint32_t used_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace spillway
