#include "tools/serve_child.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <stdexcept>

#include "tools/self_spawn.hpp"

namespace spillway::bench {
namespace {

void kill_and_reap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

serve_child::serve_child(const std::filesystem::path& dir, const std::string& toml) {
  std::filesystem::create_directories(dir);
  const auto config = (dir / "node.toml").string();
  std::ofstream{config} << toml;
  pid_ = spawn_self({"serve", "-c", config}, stderr_fd_);
  std::string said;  // until "serving", or the child's exit closes the pipe
  for (auto line = read_line(stderr_fd_.get()); !line.empty(); line = read_line(stderr_fd_.get())) {
    said += line;
    if (line.find("serving") != std::string::npos) break;
  }
  const auto at = said.find("listening on port ");
  if (said.find("serving") == std::string::npos || at == std::string::npos) {
    kill_and_reap(pid_);  // a throwing constructor gets no destructor call
    throw std::runtime_error("bench e2e: spillway serve -c " + config + " did not start: " + said);
  }
  port_ = static_cast<std::uint16_t>(std::stoul(said.substr(at + 18)));
  drain_ = std::thread{[fd = stderr_fd_.get()] {
    while (!read_line(fd).empty()) {
    }
  }};
}

serve_child::~serve_child() {
  kill_and_reap(pid_);
  drain_.join();  // the pipe's only writer is gone: its read ends
}

}  // namespace spillway::bench
