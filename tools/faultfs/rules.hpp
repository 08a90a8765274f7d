// The fault filesystem's rules: which operations fail, come back short, wait or freeze,
// and how often each rule fired. Set and read at run time through the control socket
// (control.hpp); consulted by every operation the passthrough serves.
//
// A rule is one line of `key=value` words (order free):
//   op=read|write|open|fsync|fdatasync|fsyncdir   which operation (required)
//   path=GLOB        fnmatch over the path in the mount ("/d/*.bucket"); default "*"
//   offset=A-B       read/write only: the operation's bytes overlap [A, B)
//   direct=1         only on files opened with O_DIRECT (open: only O_DIRECT opens)
//   fault=eio|enospc|einval|short|delay|freeze
//                    short: a read answers the first half of what was asked; a caller's
//                    O_DIRECT read sees the short count, but fuse takes a short answer
//                    to a page-cache read for the end of the file
//   delay_ms=N       for fault=delay
//   count=N          fire at most N times; 0 (default) = no limit
//   probability=P    fire with probability P (default 1), dice seeded by seed=S
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace faultfs {

enum class op { read, write, open, fsync, fdatasync, fsyncdir };
enum class fault { eio, enospc, einval, short_read, delay, freeze };

struct rule {
  std::uint64_t id = 0;
  op operation = op::read;
  std::string path = "*";
  std::uint64_t first = 0, last = UINT64_MAX;  // offset range [first, last)
  bool direct_only = false;
  fault action = fault::eio;
  unsigned delay_ms = 0;
  std::uint64_t count = 0;
  double probability = 1;
  std::uint64_t injected = 0;  // times it fired
  std::uint64_t held = 0;      // operations it holds frozen now
};

// One operation as the passthrough sees it.
struct access {
  op operation;
  const std::string& path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  bool direct = false;
};

// What the operation does instead of (or before) its real work.
struct verdict {
  int error = 0;           // a negative errno to answer with
  bool short_read = false;
  unsigned delay_ms = 0;
};

class rule_book {
public:
  // The rule's id, or the reason `line` is not a rule.
  std::uint64_t add(const std::string& line, std::string& why);
  // Drops every rule and lets every frozen operation go.
  void clear();
  // Lets every frozen operation go; the freeze rules stay and hold new ones.
  void release();
  // One line per rule: "rule ID injected=N held=M".
  std::string report();
  // Finds the first rule that fires on `a`; a freeze waits here until released.
  verdict decide(const access& a);

private:
  bool fires(rule& r, const access& a);

  std::mutex mutex_;
  std::condition_variable released_;
  std::uint64_t release_generation_ = 0;
  std::uint64_t next_id_ = 1;
  std::vector<rule> rules_;
  std::mt19937_64 dice_{1};
};

}  // namespace faultfs
