// `spillway bench ... --plot FILE.png`: the bench's --json, drawn by tools/plot_bench.py
// (matplotlib). The script sits beside the binary (CMake copies it there), and Debian's
// python3 runs it: a python earlier on PATH may not see Debian's python3-matplotlib.
#include "tools/commands.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

extern char** environ;

namespace spillway {

int plot_bench(const std::string& json, const std::string& png) {
  const auto script = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plot_bench.py";
  std::vector<std::string> args{"/usr/bin/python3", script.string(), json, png};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::cerr << "spillway: --plot needs /usr/bin/python3 with python3-matplotlib "
                 "(apt-get install python3-matplotlib)\n";
    return 1;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;  // the script said why
}

}  // namespace spillway
