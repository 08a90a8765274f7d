#include "runtime/placement.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

namespace spillway {
namespace {

// FNV-1a: cheap over short keys, but its low bits are weak, hence mix() after it.
std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// splitmix64's finalizer: a bijection that spreads every input bit over the output.
std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

placement::placement(std::vector<std::string> nodes) : nodes_(std::move(nodes)) {
  if (nodes_.empty()) throw std::invalid_argument("cluster.nodes: no node to place keys on");
  std::set<std::string> seen;
  for (const auto& n : nodes_) {
    if (!seen.insert(n).second)
      throw std::invalid_argument("cluster.nodes: \"" + n + "\" is listed twice");
    node_hashes_.push_back(mix(fnv1a(n)));
  }
}

std::uint64_t placement::weight(std::uint64_t key_hash, std::uint32_t node) const {
  return mix(key_hash ^ node_hashes_[node]);
}

std::vector<std::uint32_t> placement::rank(std::string_view key) const {
  const auto h = fnv1a(key);
  std::vector<std::uint32_t> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto wa = weight(h, a), wb = weight(h, b);
    return wa != wb ? wa > wb : a < b;
  });
  return order;
}

std::uint32_t placement::owner(std::string_view key) const {
  const auto h = fnv1a(key);
  std::uint32_t best = 0;
  for (std::uint32_t n = 1; n < nodes_.size(); ++n)
    if (weight(h, n) > weight(h, best)) best = n;
  return best;
}

}  // namespace spillway
