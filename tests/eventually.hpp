// Waiting on a counter that no message announces: the node's stats (what readers and
// the arena do in the background), a fault filesystem's rule counters.
#pragma once

#include <chrono>
#include <thread>

namespace spillway::test {

// Asks until `holds`, for at most 30 s: false if it never did.
template <class Predicate>
bool eventually(Predicate holds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!holds()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace spillway::test
