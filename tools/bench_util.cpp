#include "tools/bench_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace spillway::bench {

bool run_quietly(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

std::string capture(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  if (::pclose(pipe) != 0) throw std::runtime_error("failed: " + command);
  return out;
}

bool on_path(const std::string& program) { return run_quietly("command -v " + program); }

}  // namespace spillway::bench
