// What the embedding API hands back for a peer it connected to: the handle that
// node::transfer takes, and the peer's segments as its transfer host described them.
// Free of CAF, like runtime/node.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/net/segment.hpp"

namespace spillway {

struct transfer_peer {
  std::uint32_t route = 0;                  // this node's route to the peer
  std::vector<segment_descriptor> segments;  // when connected; connect again for newer ones
  std::string identity;  // the peer's transfer identity: what to export segments to
};

}  // namespace spillway
