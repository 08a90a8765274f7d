// What each actor holds from this one (a bucket's pins, the arena's leases), counted by
// holder. A holder is monitored from its first and demonitored after its last, so its
// down message arrives exactly when it went away still holding something.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include <caf/actor_addr.hpp>

namespace spillway {

class holder_counts {
public:
  // `holder` holds `n` more; a null holder (an anonymous sender) is counted, not watched.
  template <class Self>
  void add(Self* self, const caf::actor_addr& holder, std::uint32_t n) {
    auto& held = counts_[holder];
    if (held == 0 && holder) self->monitor(holder);
    held += n;
  }

  // `holder` holds `n` fewer (at most what it holds); returns how many it held.
  template <class Self>
  std::uint32_t remove(Self* self, const caf::actor_addr& holder, std::uint32_t n) {
    auto it = counts_.find(holder);
    if (it == counts_.end()) return 0;
    const auto held = it->second;
    if ((it->second -= std::min(n, held)) == 0) {
      counts_.erase(it);
      if (holder) self->demonitor(holder);
    }
    return held;
  }

  std::uint32_t held(const caf::actor_addr& holder) const {
    const auto it = counts_.find(holder);
    return it == counts_.end() ? 0 : it->second;
  }

  bool empty() const { return counts_.empty(); }

private:
  std::unordered_map<caf::actor_addr, std::uint32_t> counts_;  // none at zero
};

}  // namespace spillway
