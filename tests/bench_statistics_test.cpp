// Tests for the statistics the benches report: a median's confidence interval must be
// the order statistics the binomial distribution names, or a bench's verdict ("not
// slower beyond the noise") rests on the wrong runs.
#include "tools/bench_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

using spillway::bench::median_interval;
using spillway::bench::percentile;

namespace {

// 1, 2, ..., n in a scrambled order: the k-th lowest run is k.
std::vector<double> runs_numbered(int n) {
  std::vector<double> xs;
  for (int i = 1; i <= n; ++i) xs.push_back(i);
  std::shuffle(xs.begin(), xs.end(), std::mt19937{7});
  return xs;
}

}  // namespace

TEST_SUITE("bench statistics") {
  TEST_CASE("a median's 95 percent interval is the binomial order statistics") {
    // j per n from binomial tables: the largest j with P(B(n, 1/2) <= j - 1) <= 2.5 %.
    const std::vector<std::pair<int, int>> n_and_j{{6, 1}, {8, 1}, {9, 2}, {11, 2}, {12, 3},
                                                   {20, 6}, {30, 10}, {100, 40}};
    for (const auto& [n, j] : n_and_j) {
      CAPTURE(n);
      const auto [low, high] = median_interval(runs_numbered(n));
      CHECK(low == j);
      CHECK(high == n + 1 - j);
    }
  }

  TEST_CASE("a percentile is the nearest rank") {
    const std::vector<double> xs{5, 1, 4, 2, 3};
    CHECK(percentile(xs, 0.5) == 3);
    CHECK(percentile(xs, 0.99) == 5);
    CHECK(percentile(xs, 0.2) == 1);
    CHECK(percentile({}, 0.5) == 0);
  }

  TEST_CASE("under six runs the interval is the lowest and highest run") {
    CHECK(median_interval({0.9}) == std::pair{0.9, 0.9});
    CHECK(median_interval({1.2, 0.8, 1.0}) == std::pair{0.8, 1.2});
    CHECK(median_interval(runs_numbered(5)) == std::pair{1.0, 5.0});
  }
}
