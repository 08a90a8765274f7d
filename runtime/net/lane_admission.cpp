#include "runtime/net/lane_admission.hpp"

#include <openssl/crypto.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace spillway {
namespace {

void fill_random(std::byte* out, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::getrandom(out, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error(std::string{"lane ticket: getrandom failed: "} +
                               std::strerror(errno));
    out += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

lane_ticket lane_admission::issue(const std::string& peer) {
  std::lock_guard lock{mutex_};
  auto it = std::find_if(routes_.begin(), routes_.end(),
                         [&](const route& r) { return r.peer == peer; });
  if (it == routes_.end()) {
    route fresh{peer, {}};
    fill_random(fresh.secret.data(), fresh.secret.size());
    routes_.push_back(std::move(fresh));
    it = routes_.end() - 1;
  }
  const auto id = static_cast<std::uint64_t>(it - routes_.begin()) + 1;
  return {id, std::string(reinterpret_cast<const char*>(it->secret.data()), it->secret.size())};
}

std::optional<std::string> lane_admission::admit(std::uint64_t route_id,
                                                 const std::byte* secret,
                                                 std::size_t size) const {
  std::lock_guard lock{mutex_};
  if (route_id == 0 || route_id > routes_.size() || size != lane_secret_size) return {};
  const auto& r = routes_[route_id - 1];
  if (CRYPTO_memcmp(r.secret.data(), secret, lane_secret_size) != 0) return {};  // constant time
  return r.peer;
}

bool lane_admission::admitted(std::string_view peer) const {
  std::lock_guard lock{mutex_};
  return std::any_of(routes_.begin(), routes_.end(),
                     [&](const route& r) { return r.peer == peer; });
}

bool log_budget::allow(std::uint64_t& suppressed) {
  std::lock_guard lock{mutex_};
  const auto now = std::chrono::steady_clock::now();
  if (now - window_start_ >= window_) {
    window_start_ = now;
    used_ = 0;
  }
  suppressed = 0;
  if (used_ >= per_window_) {
    ++suppressed_;
    return false;
  }
  ++used_;
  suppressed = std::exchange(suppressed_, 0);
  return true;
}

}  // namespace spillway
