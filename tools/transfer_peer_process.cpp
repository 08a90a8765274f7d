#include "tools/transfer_peer_process.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/self_spawn.hpp"

namespace spillway::bench {
namespace {

std::uint64_t number_after(const std::string& line, const std::string& key) {
  const auto at = line.find(key);
  if (at == std::string::npos) throw std::runtime_error("transfer-peer said: " + line);
  return std::stoull(line.substr(at + key.size()));
}

int stop_peer(pid_t pid) {
  if (pid <= 0) return -1;
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

transfer_peer_process::transfer_peer_process(const std::string& segment_size,
                                             const std::string& config,
                                             const std::vector<std::string>& export_to) {
  std::vector<std::string> args{"transfer-peer", "--segment-size", segment_size};
  if (!config.empty()) args.insert(args.end(), {"-c", config});
  for (const auto& peer : export_to) args.insert(args.end(), {"--export-to", peer});
  pid_ = spawn_self(args, stderr_fd_);
  const auto line = read_line(stderr_fd_.get());  // the ready line
  if (line.find("ready") == std::string::npos) {
    stop_peer(pid_);  // a throwing constructor gets no destructor call
    throw std::runtime_error("transfer-peer did not start: " + line);
  }
  try {
    control_port = static_cast<std::uint16_t>(number_after(line, "control="));
    stream_port = static_cast<std::uint16_t>(number_after(line, "stream="));
    segment = number_after(line, "segment=");
    read_only_segment = number_after(line, "read_only=");
  } catch (...) {  // a ready line we cannot read: the peer is of no use
    stop_peer(pid_);
    throw;
  }
}

transfer_peer_process::~transfer_peer_process() { stop(); }

int transfer_peer_process::stop() { return stop_peer(std::exchange(pid_, -1)); }

}  // namespace spillway::bench
