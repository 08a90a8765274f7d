// `spillway transfer-peer` as a child of this process, for `bench transfer` and `soak`:
// started from /proc/self/exe, its ready line parsed, stopped with SIGTERM.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/io/unique_fd.hpp"

namespace spillway::bench {

class transfer_peer_process {
public:
  // `config`: a node.toml for its -c (its [fault] and [transfer] keys), or "".
  // `export_to`: the transfer identities its segments are exported to.
  transfer_peer_process(const std::string& segment_size, const std::string& config,
                        const std::vector<std::string>& export_to);
  ~transfer_peer_process();  // stop()
  transfer_peer_process(const transfer_peer_process&) = delete;
  transfer_peer_process& operator=(const transfer_peer_process&) = delete;

  std::uint16_t control_port = 0;
  std::uint16_t stream_port = 0;
  std::uint64_t segment = 0;
  std::uint64_t read_only_segment = 0;  // 64 KiB, exported read-only
  pid_t pid() const { return pid_; }

  // Stops it (if its [fault] has not killed it) and reaps it; its exit code, 128 + the
  // signal's number when a signal ended it. Idempotent: -1 once reaped.
  int stop();

private:
  pid_t pid_ = -1;
  unique_fd stderr_fd_;  // kept open: a peer that logs must not die of SIGPIPE
};

}  // namespace spillway::bench
