// Rendezvous placement (runtime/placement.hpp): an even share per node, and nodes that
// come or go move only the keys they win or held.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/placement.hpp"

namespace spillway {
namespace {

std::vector<std::string> keys(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back("layer7/block-" + std::to_string(i));
  return out;
}

const std::vector<std::string> three{"127.0.0.1:7401", "127.0.0.1:7402", "127.0.0.1:7403"};

TEST_SUITE("placement") {

// 30 000 keys over 3 nodes: a share's standard deviation is 0.27 %, so 2 % is 7 sigma.
TEST_CASE("each node owns a third of the keys, within 2 %") {
  const placement p{three};
  std::vector<std::size_t> owned(3);
  for (const auto& k : keys(30000)) ++owned[p.owner(k)];
  for (auto n : owned) {
    CHECK(n > 30000 * (1.0 / 3 - 0.02));
    CHECK(n < 30000 * (1.0 / 3 + 0.02));
  }
}

TEST_CASE("the ranking lists every node once, its owner first") {
  const placement p{three};
  std::map<std::uint32_t, std::size_t> seconds_of_node0;
  for (const auto& k : keys(3000)) {
    const auto r = p.rank(k);
    CHECK(std::set<std::uint32_t>(r.begin(), r.end()).size() == 3);
    CHECK(r.front() == p.owner(k));
    if (r[0] == 0) ++seconds_of_node0[r[1]];
  }
  // A node's keys fall to the others evenly when it goes, not all to one of them.
  CHECK(seconds_of_node0[1] > 400);
  CHECK(seconds_of_node0[2] > 400);
}

TEST_CASE("adding a node moves only the keys it now owns") {
  const placement before{three};
  auto grown = three;
  grown.push_back("127.0.0.1:7404");
  const placement after{grown};
  std::size_t moved = 0;
  for (const auto& k : keys(20000)) {
    const auto was = before.owner(k), is = after.owner(k);
    if (was == is) continue;
    ++moved;
    CHECK(is == 3);
  }
  CHECK(moved > 20000 * (0.25 - 0.02));  // its fair share came to it
  CHECK(moved < 20000 * (0.25 + 0.02));
}

TEST_CASE("removing a node moves only the keys it owned") {
  const placement before{three};
  const placement after{{three[0], three[2]}};
  for (const auto& k : keys(20000)) {
    const auto was = before.owner(k);
    if (was == 1) continue;
    CHECK(after.nodes()[after.owner(k)] == three[was]);
  }
}

TEST_CASE("placement does not depend on the order the nodes are listed in") {
  const placement p{three};
  const placement q{{three[2], three[0], three[1]}};
  for (const auto& k : keys(2000)) CHECK(p.nodes()[p.owner(k)] == q.nodes()[q.owner(k)]);
}

TEST_CASE("no node, or a node named twice, is refused and named") {
  CHECK_THROWS_WITH_AS(placement{{}}, doctest::Contains("cluster.nodes"), std::invalid_argument);
  CHECK_THROWS_WITH_AS((placement{{three[0], three[0]}}), doctest::Contains(three[0].c_str()),
                       std::invalid_argument);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
