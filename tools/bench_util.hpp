// What every `spillway bench` shares: medians of interleaved runs, wall-clock timing,
// and running an outside program (fio) to time the physical limit.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace spillway::bench {

inline double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const auto mid = xs.size() / 2;
  return xs.size() % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
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
