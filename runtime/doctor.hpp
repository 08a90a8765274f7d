// `spillway doctor`: what an operator must know before trusting this machine with a
// node, one line per check, each with ok/warn/fail and what to do about it.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace spillway {

enum class doctor_level { ok, warn, fail };

struct doctor_line {
  std::string check;        // short name: "kernel", "io_uring", "memlock", ...
  doctor_level level = doctor_level::ok;
  std::string detail;       // what was found and, unless ok, what to do
};

struct doctor_report {
  std::vector<doctor_line> lines;
  // False when any line failed: the configured node cannot run here.
  bool can_run() const;
};

doctor_report run_doctor(const node_config& config);

// One line per check: "ok    kernel      6.18.44: ...".
std::string format_report(const doctor_report& report);

}  // namespace spillway
