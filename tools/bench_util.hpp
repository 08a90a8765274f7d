// What every `spillway bench` shares: medians of interleaved runs, wall-clock timing,
// and running an outside program (fio) to time the physical limit.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace spillway::bench {

inline double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const auto mid = xs.size() / 2;
  return xs.size() % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
}

// A 95 % confidence interval of the median, free of any assumption about the noise's
// distribution: the j-th lowest and j-th highest of n runs, j the largest for which the
// true median lies outside with probability at most 5 % (binomial, p = 1/2). Under six
// runs even the lowest and highest run cover less than 95 %; it is those.
inline std::pair<double, double> median_interval(std::vector<double> xs) {
  if (xs.empty()) return {0, 0};
  std::sort(xs.begin(), xs.end());
  const auto n = static_cast<int>(xs.size());
  double pmf = std::ldexp(1.0, -n);  // P(B = 0)
  double below = 0;                  // P(B <= j - 1)
  int j = 1;
  for (int i = 0; 2 * i + 3 <= n; ++i) {  // try j = i + 2: needs P(B <= i + 1) <= 2.5 %
    below += pmf;
    pmf *= static_cast<double>(n - i) / (i + 1);
    if (2 * (below + pmf) > 0.05) break;
    j = i + 2;
  }
  return {xs[static_cast<std::size_t>(j - 1)], xs[static_cast<std::size_t>(n - j)]};
}

// The nearest-rank percentile (p in (0, 1]): the smallest value at least p of them
// do not exceed.
inline double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(xs.size())));
  return xs[std::clamp<std::size_t>(rank, 1, xs.size()) - 1];
}

class stopwatch {
public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Runs a shell command, its output discarded; true when it exited 0.
bool run_quietly(const std::string& command);

// Runs a shell command and returns what it wrote to stdout; throws if it failed.
std::string capture(const std::string& command);

// Whether `program` is on PATH.
bool on_path(const std::string& program);

}  // namespace spillway::bench
