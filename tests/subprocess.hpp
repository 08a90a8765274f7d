// Real child processes for tests: the `spillway` binary run as a user runs it, its
// stdout and stderr captured, signals sent, exit codes checked.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace spillway::test {

class child_process {
public:
  explicit child_process(const std::vector<std::string>& argv);
  ~child_process();  // kills and reaps a child still running
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Reads output until stderr contains `needle`; false if the child closed its
  // output or `limit` passed first. A bound for a hung child, not a synchronisation.
  bool wait_for_stderr(std::string_view needle, std::chrono::milliseconds limit);

  // The same for stdout, until `needle` occurs `count` times.
  bool wait_for_stdout(std::string_view needle, std::size_t count,
                       std::chrono::milliseconds limit);

  void send_signal(int signal);

  // Reads everything the child still writes, then reaps it; returns the exit code
  // (128 + signal number when a signal ended it).
  int finish();

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

private:
  bool read_some(std::chrono::milliseconds limit);  // false once both pipes are closed
  template <class Done>
  bool read_until(Done done, std::chrono::milliseconds limit);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
};

struct process_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `spillway ARGS...` to completion.
process_result run_spillway(const std::vector<std::string>& args);

// Runs any program (argv[0] a path) to completion.
process_result run_command(const std::vector<std::string>& argv);

}  // namespace spillway::test
