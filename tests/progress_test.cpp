// The progress line of long commands (runtime/io/progress.hpp): its text, silence when
// stderr is not a terminal, and the line itself when it is one: a pseudo-terminal
// here, in this process and under the `spillway` binary.
#include <doctest/doctest.h>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "runtime/io/progress.hpp"
#include "runtime/io/unique_fd.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

// Everything written to the other end until it closes (a pty master reads EIO then).
std::string drain(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// Runs `spillway ARGS...` with stderr on a pseudo-terminal (stdout to /dev/null):
// what the terminal showed, and the exit code.
std::pair<std::string, int> spillway_on_terminal(const std::vector<std::string>& args) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(SPILLWAY_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (std::freopen("/dev/null", "w", stdout) == nullptr) ::_exit(126);
    ::execv(SPILLWAY_BINARY, argv.data());
    ::_exit(127);
  }
  const unique_fd terminal{master};
  auto shown = drain(master);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return {std::move(shown), WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST_SUITE("progress") {

TEST_CASE("a progress line says done of total, percent, bytes and rate") {
  CHECK(progress_line("gen", "keys", {120, 1000, 216ull << 20}, 0.5) ==
        "gen: 120/1000 keys (12%), 216.0 MiB, 432.0 MiB/s");
  CHECK(progress_line("recovery", "files", {7, 0, 0}, 2.0) == "recovery: 7 files, 3.5 files/s");
  CHECK(progress_line("bench", "runs", {3, 3, 1000}, 1.0) ==
        "bench: 3/3 runs (100%), 1000 B, 1000 B/s");
  CHECK(progress_line("x", "runs", {0, 4, 0}, 0.0) == "x: 0/4 runs (0%), 0.0 runs/s");
}

TEST_CASE("progress writes nothing where its fd is not a terminal") {
  int ends[2];
  REQUIRE(::pipe(ends) == 0);
  const unique_fd read_end{ends[0]};
  {
    const unique_fd write_end{ends[1]};
    progress shown{"gen", "keys", 3, write_end.get()};
    shown.advance(3, 300);
    shown.finish();
  }
  CHECK(drain(read_end.get()).empty());
}

TEST_CASE("progress on a terminal rewrites one line and ends it") {
  int master = -1, terminal = -1;
  REQUIRE(::openpty(&master, &terminal, nullptr, nullptr, nullptr) == 0);
  const unique_fd master_end{master};
  {
    const unique_fd terminal_end{terminal};
    progress shown{"gen", "keys", 2, terminal_end.get()};
    shown.advance(1);
    shown.advance(1);  // within 0.5 s of the first: not drawn until finish
    shown.finish();
    shown.finish();    // once only
  }
  const auto text = drain(master_end.get());
  CHECK(text.starts_with("\rgen: 1/2 keys (50%)"));
  CHECK(text.find("\rgen: 2/2 keys (100%)") != std::string::npos);
  CHECK(text.ends_with("\x1b[K\r\n"));  // the tty's ONLCR makes \n \r\n
  CHECK(text.find("2/2") == text.rfind("2/2"));
}

TEST_CASE("gen, inspect --verify and recovery show progress when stderr is a terminal") {
  test::temp_dir dir;
  const auto data = (dir.path() / "data").string();
  const auto small = test::small_arena_config(dir.path());
  const auto [gen, gen_exit] =
    spillway_on_terminal({"gen", "-c", small, "--count", "8", "--size", "64KiB",
                          "--data-dir", data});
  CHECK_MESSAGE(gen_exit == 0, gen);
  CHECK(gen.find("\rgen: 8/8 keys (100%), 512.0 KiB") != std::string::npos);
  const auto [inspect, inspect_exit] =
    spillway_on_terminal({"inspect", "--verify", "--data-dir", data});
  CHECK_MESSAGE(inspect_exit == 0, inspect);
  CHECK(inspect.find("\rinspect --verify: ") != std::string::npos);
  CHECK(inspect.find(" buckets (100%)") != std::string::npos);
  const auto [again, again_exit] =  // its node recovers the buckets the first gen wrote
    spillway_on_terminal({"gen", "-c", small, "--count", "1", "--size", "4KiB",
                          "--data-dir", data});
  CHECK_MESSAGE(again_exit == 0, again);
  CHECK(again.find("\rrecovery: ") != std::string::npos);
  CHECK(again.find(" files (100%)") != std::string::npos);
}

TEST_CASE("gen and inspect --verify print no progress when stderr is not a terminal") {
  test::temp_dir dir;
  const auto data = (dir.path() / "data").string();
  const auto small = test::small_arena_config(dir.path());
  const auto gen =
    test::run_spillway({"gen", "-c", small, "--count", "8", "--size", "64KiB",
                        "--data-dir", data});
  CHECK(gen.exit_code == 0);
  const auto inspect = test::run_spillway({"inspect", "--verify", "--data-dir", data});
  CHECK(inspect.exit_code == 0);
  for (const auto* err : {&gen.err, &inspect.err}) {
    CHECK(err->find('\r') == std::string::npos);
    CHECK(err->find("keys (") == std::string::npos);
    CHECK(err->find("buckets (") == std::string::npos);
  }
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
