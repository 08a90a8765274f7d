#include "tools/transfer_peer_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>
#include <vector>

extern char** environ;

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
                                             const std::string& config) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  stderr_fd_.reset(out[0]);
  unique_fd child_stderr{out[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_stderr.get(), 2);  // its stderr: the ready line
  std::vector<std::string> args{"/proc/self/exe", "transfer-peer", "--segment-size",
                                segment_size};
  if (!config.empty()) args.insert(args.end(), {"-c", config});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  child_stderr.reset();  // the child holds the only write end now: its exit ends our read
  std::string line;  // read byte by byte: nothing past the ready line is consumed
  for (char c = 0; rc == 0 && line.find('\n') == std::string::npos;) {
    if (::read(stderr_fd_.get(), &c, 1) != 1) break;
    line.push_back(c);
  }
  if (line.find("ready") == std::string::npos) {
    stop_peer(pid_);  // a throwing constructor gets no destructor call
    throw std::runtime_error("transfer-peer did not start: " + line);
  }
  try {
    control_port = static_cast<std::uint16_t>(number_after(line, "control="));
    stream_port = static_cast<std::uint16_t>(number_after(line, "stream="));
    segment = number_after(line, "segment=");
  } catch (...) {  // a ready line we cannot read: the peer is of no use
    stop_peer(pid_);
    throw;
  }
}

transfer_peer_process::~transfer_peer_process() { stop(); }

int transfer_peer_process::stop() { return stop_peer(std::exchange(pid_, -1)); }

}  // namespace spillway::bench
