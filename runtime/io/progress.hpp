// A progress line for work that can take a while (gen, the benches, inspect --verify,
// recovery at start): one line on stderr, rewritten with \r at most every 0.5 s and
// ended with a newline, shown only when stderr is a terminal, so logs and pipes never
// see it. Here, not in tools/, because recovery, a block, reports to it too.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace spillway {

struct progress_figures {
  std::uint64_t done = 0;
  std::uint64_t total = 0;  // 0: not known
  std::uint64_t bytes = 0;  // 0: the rate is in items a second
};

// "gen: 120/1000 keys (12%), 216.0 MiB, 412.3 MiB/s": what `seconds` after the start
// looks like; items a second where no bytes were counted.
std::string progress_line(std::string_view what, std::string_view unit,
                          const progress_figures& figures, double seconds);

class progress {
public:
  // Shows on `fd` only when isatty(fd).
  progress(std::string what, std::string unit, std::uint64_t total, int fd = 2);
  ~progress() { finish(); }
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  void set_total(std::uint64_t total) { figures_.total = total; }
  void advance(std::uint64_t items, std::uint64_t bytes = 0);
  // The last line, then a newline; nothing when nothing was shown. Idempotent.
  void finish();


private:
  void show();

  using clock = std::chrono::steady_clock;
  std::string what_;
  std::string unit_;
  progress_figures figures_;
  int fd_;
  bool terminal_;
  bool shown_ = false;
  clock::time_point start_ = clock::now();
  clock::time_point last_shown_{};
};

}  // namespace spillway
