// Which nodes own a key: rendezvous (highest-random-weight) hashing. Each node gets a
// weight per key from a hash of both; a key's owners are the nodes by falling weight.
// Removing a node moves only the keys it ranked first for (their next node takes them),
// and adding one takes only the keys it now wins, from whichever node had them.
//
// A node is named by the "host:port" string of cluster.nodes, not by its node.id: a
// client must place a key before it has reached any node, and a node that is down must
// still own its keys (so that they fail fast as unavailable, rather than be looked for
// elsewhere). Every client of a cluster must therefore list each node the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spillway {

class placement {
public:
  // Throws std::invalid_argument for an empty list or a node named twice.
  explicit placement(std::vector<std::string> nodes);

  // Every node's index, the key's first owner first.
  std::vector<std::uint32_t> rank(std::string_view key) const;
  std::uint32_t owner(std::string_view key) const;

  const std::vector<std::string>& nodes() const { return nodes_; }

private:
  std::uint64_t weight(std::uint64_t key_hash, std::uint32_t node) const;

  std::vector<std::string> nodes_;
  std::vector<std::uint64_t> node_hashes_;
};

}  // namespace spillway
