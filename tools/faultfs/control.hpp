// The control socket: a unix stream socket that takes one command per connection, a
// line, and answers before closing it. A socket and not a file in the mount, so the
// data dir under test holds only the node's files and no fault can hit its own control.
//   add RULE     -> "ok ID"            (rules.hpp has the words of a rule)
//   clear        -> "ok"               every rule dropped, every frozen operation let go
//   release      -> "ok"               every frozen operation let go
//   stats        -> "ok" then one "rule ID injected=N held=M" line per rule
//   anything else, or a bad rule -> "error WHY"
#pragma once

#include <string>
#include <thread>

#include "tools/faultfs/rules.hpp"

namespace faultfs {

class control_server {
public:
  // Listens on `path` (replacing a stale socket there); throws std::system_error.
  control_server(const std::string& path, rule_book& rules);
  ~control_server();  // stops serving and removes the socket
  control_server(const control_server&) = delete;
  control_server& operator=(const control_server&) = delete;

private:
  void serve();
  std::string answer(const std::string& line);

  std::string path_;
  rule_book& rules_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace faultfs
