// The `spillway` binary as an operator runs it: exit codes, messages, signals.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "tools/generated_value.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "tests/crafted_bucket.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

namespace spillway {
namespace {

using test::run_spillway;

std::string write_file(const test::temp_dir& dir, const std::string& name,
                       const std::string& text) {
  const auto path = (dir.path() / name).string();
  std::ofstream{path} << text;
  return path;
}

// A node config that can run beside other tests: its own dir, any free port.
std::string serve_config(const test::temp_dir& dir) {
  return write_file(dir, "node.toml",
                    "[node]\nlisten = \"127.0.0.1:0\"\n"
                    "[storage]\ndata_dir = \"" + (dir.path() / "data").string() + "\"\n" +
                    std::string{test::small_arena_toml} + "readers = 2\n");
}

// put, get and gen start a node of their own: `args` with the tests' small arena, by -c.
std::vector<std::string> on_small_arena(const test::temp_dir& dir, std::vector<std::string> args) {
  args.insert(args.begin() + 1, {"-c", test::small_arena_config(dir.path())});
  return args;
}

test::process_result run_node_command(const test::temp_dir& dir, std::vector<std::string> args) {
  return run_spillway(on_small_arena(dir, std::move(args)));
}

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_SUITE("cli") {

TEST_CASE("usage errors exit 2 and say what was wrong") {
  for (const auto& args : std::vector<std::vector<std::string>>{
         {}, {"bogus"}, {"config"}, {"config", "--print", "--bogus"}, {"serve"},
         {"doctor", "-c"}}) {
    const auto r = run_spillway(args);
    CHECK(r.exit_code == 2);
    CHECK(!r.err.empty());
  }
}

TEST_CASE("--help lists the subcommands and exits 0") {
  const auto r = run_spillway({"--help"});
  CHECK(r.exit_code == 0);
  for (const char* sub : {"serve", "demo", "config", "doctor"})
    CHECK_MESSAGE(r.out.find(sub) != std::string::npos, sub);
  CHECK(run_spillway({"serve", "--help"}).exit_code == 0);
}

TEST_CASE("a missing config file is a one-line error and exit 2") {
  const auto r = run_spillway({"config", "--print", "-c", "/nonexistent/node.toml"});
  CHECK(r.exit_code == 2);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find("/nonexistent/node.toml") != std::string::npos);
  CHECK(r.out.empty());
}

// Issue 18, item 10: `-c /dev/zero` was read for ever, its buffer growing until the
// memory ran out.
TEST_CASE("a config file that never ends is refused at a size bound") {
  test::child_process config{{SPILLWAY_BINARY, "config", "--print", "-c", "/dev/zero"}};
  // A bound for a hung child, not a synchronisation: the refusal comes at once.
  const bool refused = config.wait_for_stderr("/dev/zero", std::chrono::seconds(30));
  CHECK_MESSAGE(refused, "spillway config still reading /dev/zero, or died: ", config.err());
  if (!refused) return;  // the child is killed with `config`
  CHECK(config.finish() == 2);
  CHECK(config.err().find("larger than") != std::string::npos);
}

TEST_CASE("an invalid config names file and line and column and key and exits 2") {
  test::temp_dir dir;
  const auto path = write_file(dir, "bad.toml", "[read]\nwindow = 0\n");
  const auto r = run_spillway({"doctor", "-c", path});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(path + ":2:") != std::string::npos);
  CHECK(r.err.find("read.window") != std::string::npos);
}

TEST_CASE("config --print writes TOML that loads back to the same config") {
  test::temp_dir dir;
  const auto path = write_file(dir, "node.toml",
                               "[read]\nwindow = 64\narena_size = \"2GiB\"\n"
                               "[storage]\neviction = \"lru\"\n"
                               "[cluster]\nnodes = [\"127.0.0.1:7400\", \"127.0.0.1:7410\"]\n");
  const auto r = run_spillway({"config", "--print", "-c", path});
  REQUIRE(r.exit_code == 0);
  const auto printed = load_config_text(r.out, "printed");
  CHECK(printed == load_config_file(path));
  CHECK(printed.read.window == 64);
  CHECK(printed.read.arena_size == (2ull << 30));
}

TEST_CASE("config --print without -c prints every default") {
  const auto r = run_spillway({"config", "--print"});
  REQUIRE(r.exit_code == 0);
  CHECK(load_config_text(r.out, "printed") == load_config_text("", "defaults"));
  for (const char* section : {"[node]", "[storage]", "[read]", "[transfer]", "[cluster]",
                              "[fault]"})
    CHECK_MESSAGE(r.out.find(section) != std::string::npos, section);
}

TEST_CASE("serve stops cleanly with exit 0 on SIGTERM and on SIGINT") {
  for (int signal : {SIGTERM, SIGINT}) {
    test::temp_dir dir;
    test::child_process serve{{SPILLWAY_BINARY, "serve", "-c", serve_config(dir)}};
    REQUIRE_MESSAGE(serve.wait_for_stderr("serving", std::chrono::seconds(30)), serve.err());
    serve.send_signal(signal);
    CHECK(serve.finish() == 0);
    CHECK(serve.err().find("stopped") != std::string::npos);
  }
}

TEST_CASE("doctor exits 1 when the config asks for rdma on a machine without it") {
  if (!list_rdma_devices().names.empty()) {
    return test::skip_test("this machine has an RDMA device");
  }
  test::temp_dir dir;
  const auto path = write_file(dir, "rdma.toml",
                               "[storage]\ndata_dir = \"" + dir.path().string() + "\"\n"
                               "[transfer]\ntransport = \"rdma\"\n");
  const auto r = run_spillway({"doctor", "-c", path});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("fail") != std::string::npos);
}

TEST_CASE("doctor exits 0 on a runnable config and prints one line per check") {
  test::temp_dir dir;
  const auto r = run_spillway({"doctor", "-c", serve_config(dir)});
  CHECK(r.exit_code == 0);
  CHECK(count_lines(r.out) >= 9);
}

TEST_CASE("put then get returns the bytes and a missing key is a one-line error") {
  test::temp_dir dir;
  const auto data = (dir.path() / "data").string();
  std::string value(300000, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7);
  const auto file = write_file(dir, "value.bin", value);
  CHECK(run_node_command(dir, {"put", "kv/layer-0", file, "--data-dir", data}).exit_code == 0);
  const auto got = run_node_command(dir, {"get", "kv/layer-0", "--data-dir", data});
  CHECK(got.exit_code == 0);
  CHECK(got.out == value);
  const auto missing = run_node_command(dir, {"get", "kv/absent", "--data-dir", data});
  CHECK(missing.exit_code == 1);
  CHECK(count_lines(missing.err) == 1);
  CHECK(missing.err.find("kv/absent") != std::string::npos);
  CHECK(missing.err.find("not_found") != std::string::npos);
}

TEST_CASE("gen writes through the put path and inspect --verify finds every record sound") {
  test::temp_dir dir;
  const auto data = (dir.path() / "data").string();
  const auto gen = run_node_command(dir, {"gen", "--count", "30", "--size", "48KiB", "--seed",
                                          "9", "--data-dir", data});
  CHECK(gen.exit_code == 0);
  CHECK(gen.out.find("wrote 30 keys") != std::string::npos);
  CHECK(run_node_command(dir, {"gen", "--count", "1", "--size", "lots", "--data-dir", data})
          .exit_code == 2);
  const auto inspect = run_spillway({"inspect", "--verify", "--data-dir", data});
  CHECK(inspect.exit_code == 0);
  CHECK(inspect.out.find("keys 30\n") != std::string::npos);
  CHECK(inspect.out.find("verified: 0 bad records") != std::string::npos);
  const auto got = run_node_command(dir, {"get", "gen-0000000007", "--data-dir", data});
  CHECK(got.out == generated_value(48 << 10, 9, "gen-0000000007"));
}

// DESIGN.md's "io_uring unavailable": the kernel itself refuses io_uring_setup (ENOSYS,
// as on a kernel built without it or a container whose seccomp profile blocks it), and
// the readers read with pread. The same data is written and read back exact under it.
TEST_CASE("a kernel that refuses io_uring leaves the readers on pread and the bytes exact" *
          doctest::test_suite("fault")) {
  if (std::string{SPILLWAY_DENY_SYSCALL_BINARY}.empty())
    return test::skip_test("spillway-deny-syscall not built (Debian: libseccomp-dev)");
  test::temp_dir dir;
  const auto data = (dir.path() / "data").string();
  auto denied = [&](std::vector<std::string> args) {
    args = on_small_arena(dir, std::move(args));
    args.insert(args.begin(), {SPILLWAY_DENY_SYSCALL_BINARY, "io_uring_setup", "ENOSYS", "--",
                               SPILLWAY_BINARY});
    return test::run_command(args);
  };
  const auto gen = denied({"gen", "--count", "30", "--size", "48KiB", "--seed", "9",
                           "--data-dir", data});
  REQUIRE_MESSAGE(gen.exit_code == 0, gen.err);
  const auto got = denied({"get", "gen-0000000007", "--data-dir", data});
  CHECK(got.exit_code == 0);
  CHECK(got.out == generated_value(48 << 10, 9, "gen-0000000007"));
  CHECK_MESSAGE(got.err.find("io_uring unusable (ENOSYS), reading with pread") !=
                  std::string::npos, got.err);  // the refusal happened, and was said
  const auto unfiltered = run_node_command(dir, {"get", "gen-0000000007", "--data-dir", data});
  CHECK(unfiltered.out == got.out);
  CHECK(unfiltered.err.find("io_uring unusable") == std::string::npos);
}

TEST_CASE("inspect --verify names a damaged record and get names the corrupt key") {
  test::temp_dir dir;
  const auto data = dir.path() / "data";
  CHECK(run_node_command(dir, {"put", "victim", write_file(dir, "v", std::string(10000, 'v')),
                               "--data-dir", data.string()}).exit_code == 0);
  std::filesystem::path bucket;
  for (const auto& e : std::filesystem::directory_iterator{data})
    if (e.path().extension() == ".bucket") bucket = e.path();
  {
    std::fstream f{bucket, std::ios::in | std::ios::out | std::ios::binary};
    // 100 bytes into the value of the first record
    f.seekp(static_cast<std::streamoff>(bucket_format::value_offset(4096, 6) + 100));
    f.put('w');
  }
  const auto inspect = run_spillway({"inspect", "--verify", "--data-dir", data.string()});
  CHECK(inspect.exit_code == 1);
  CHECK(inspect.out.find(bucket.filename().string()) != std::string::npos);
  CHECK(inspect.out.find("key 'victim' offset 4096") != std::string::npos);
  const auto get = run_node_command(dir, {"get", "victim", "--data-dir", data.string()});
  CHECK(get.exit_code == 1);
  CHECK(get.out.empty());
  CHECK(get.err.find("victim: corrupt") != std::string::npos);
}

// Issue 18, item 7: a footer with a valid crc and an index size near 2^64 made the
// node, get, put and inspect all exit with "cannot create std::vector larger than
// max_size()" until someone deleted the file by hand.
TEST_CASE("a crafted index size is a damaged file to inspect, get and put, not a crash") {
  test::temp_dir dir;
  const auto data = dir.path() / "data";
  const auto value = std::string(10000, 'g');
  for (const char* key : {"good", "victim"})
    REQUIRE(run_node_command(dir, {"put", key, write_file(dir, "v", value), "--data-dir",
                                   data.string()}).exit_code == 0);
  std::filesystem::path victim;
  for (const auto& e : std::filesystem::directory_iterator{data}) {
    bucket_index index;
    if (read_bucket_index(e.path(), index).empty() && index.entries[0].key == "victim")
      victim = e.path();
  }
  REQUIRE(!victim.empty());
  test::recraft_bucket(victim, [](bucket_index& b) {
    b.footer.index_offset = b.file_size - bucket_format::page_size;
    b.footer.index_size = UINT64_MAX - 100;
  });
  const auto inspect = run_spillway({"inspect", "--data-dir", data.string()});
  CHECK(inspect.exit_code == 1);
  CHECK_MESSAGE(inspect.out.find("damaged " + victim.filename().string()) != std::string::npos,
                inspect.out, inspect.err);
  CHECK(inspect.out.find("index size") != std::string::npos);
  const auto get = run_node_command(dir, {"get", "good", "--data-dir", data.string()});
  CHECK_MESSAGE(get.exit_code == 0, get.err);
  CHECK((get.out == value));
  CHECK(run_node_command(dir, {"put", "after", write_file(dir, "v", value), "--data-dir",
                               data.string()}).exit_code == 0);
}

// Issue 18, item 9: keys reached the logs and the terminal unescaped, so a key holding a
// newline forged a log line and one holding ANSI escapes drove the terminal. Here the
// keys pass every place that prints one: the batch's log of a corrupt record, the
// recovery log and inspect's line for a damaged index, inspect --verify's bad record
// and get's error line.
TEST_CASE("a key with a newline and escapes is printed escaped everywhere") {
  test::temp_dir dir;
  const auto data = dir.path() / "data";
  const std::string forged = "\n2026-01-01T00:00:00.000 info forged";
  const std::string corrupt_key = "corrupt" + forged + "\x1b[2J";
  const std::string damaged_key = "damaged" + forged + "\x1b[2J";
  for (const auto& key : {corrupt_key, damaged_key})
    REQUIRE(run_node_command(dir, {"put", key, write_file(dir, "v", std::string(10000, 'v')),
                                   "--data-dir", data.string()}).exit_code == 0);
  for (const auto& e : std::filesystem::directory_iterator{data}) {
    bucket_index index;
    if (!read_bucket_index(e.path(), index).empty()) continue;
    if (index.entries[0].key == damaged_key) {
      test::recraft_bucket(e.path(), [](bucket_index& b) {
        b.entries[0].offset = UINT64_MAX - bucket_format::page_size + 1;
      });
    } else {
      std::fstream f{e.path(), std::ios::in | std::ios::out | std::ios::binary};
      f.seekp(static_cast<std::streamoff>(
        bucket_format::value_offset(index.entries[0].offset, corrupt_key.size())));
      f.put('w');
    }
  }
  const auto inspect = run_spillway({"inspect", "--verify", "--data-dir", data.string()});
  const auto get = run_node_command(dir, {"get", corrupt_key, "--data-dir", data.string()});
  CHECK(get.exit_code == 1);
  for (const auto& printed : {inspect.out, get.err}) {
    CHECK_MESSAGE(printed.find(forged) == std::string::npos, printed);
    CHECK(printed.find('\x1b') == std::string::npos);
  }
  const std::string escaped = "\\x0a2026-01-01T00:00:00.000 info forged\\x1b[2J";
  CHECK(inspect.out.find("damaged" + escaped) != std::string::npos);  // the index entry
  CHECK(inspect.out.find("corrupt" + escaped) != std::string::npos);  // the bad record
  CHECK(get.err.find("damaged" + escaped) != std::string::npos);      // the recovery log
  CHECK(get.err.find("batch: key 'corrupt" + escaped) != std::string::npos);
  CHECK(get.err.find("spillway get: corrupt" + escaped + ": corrupt") != std::string::npos);
}

TEST_CASE("serve refuses a listener off loopback unless security.allow_insecure and then warns") {
  test::temp_dir dir;
  const auto config = [&](const std::string& security) {
    return write_file(dir, "open.toml",
                      "[node]\nlisten = \"0.0.0.0:0\"\n[storage]\ndata_dir = \"" +
                        (dir.path() / "data").string() + "\"\n[read]\nreaders = 1\n" + security);
  };
  const auto refused = run_spillway({"serve", "-c", config("")});
  CHECK(refused.exit_code != 0);
  CHECK_MESSAGE(refused.err.find("node.listen = \"0.0.0.0:0\": not a loopback address") !=
                  std::string::npos,
                refused.err);
  CHECK(refused.err.find("security.allow_insecure") != std::string::npos);

  test::child_process serve{
    {SPILLWAY_BINARY, "serve", "-c", config("[security]\nallow_insecure = true\n")}};
  REQUIRE_MESSAGE(serve.wait_for_stderr("serving", std::chrono::seconds(30)), serve.err());
  CHECK(serve.err().find("INSECURE: node.listen = \"0.0.0.0:0\"") != std::string::npos);
  serve.send_signal(SIGTERM);
  const int code = serve.finish();
  CHECK_MESSAGE(code == 0, serve.err());
}

TEST_CASE("the store commands refuse a data dir that a running node holds") {
  test::temp_dir dir;
  test::child_process serve{{SPILLWAY_BINARY, "serve", "-c", serve_config(dir)}};
  REQUIRE_MESSAGE(serve.wait_for_stderr("serving", std::chrono::seconds(30)), serve.err());
  const auto r = run_spillway({"inspect", "--data-dir", (dir.path() / "data").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("in use by another spillway process") != std::string::npos);
}

// A small bench read (64 keys of 128 KiB, no fio) whose size options are spelled `dataset`
// and `batch`; its first table line states the keys and batch bytes those sizes gave.
std::string small_bench_read(const test::temp_dir& dir, const std::string& dataset,
                             const std::string& batch) {
  const auto r = run_spillway({"bench", "read", "--object-size", "128KiB", "--dataset", dataset,
                               "--batch", batch, "--arena", "16MiB", "--concurrency", "1",
                               "--runs", "1", "--no-fio", "--dir", dir.path().string()});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto at = r.out.find("object size");
  REQUIRE(at != std::string::npos);
  return r.out.substr(at, r.out.find('\n', at) - at);
}

TEST_CASE("every size option takes the config's forms: 8MiB and 8388608 give the same run") {
  test::temp_dir dir;
  const auto spelled = small_bench_read(dir, "8MiB", "2MiB");
  CHECK(spelled == small_bench_read(dir, "8388608", "2097152"));
  CHECK(spelled.find("64 keys") != std::string::npos);
}

TEST_CASE("a bad size names its option") {
  for (const auto& [option, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
         {"--dataset", {"bench", "read", "--dataset", "4Gib"}},
         {"--object-size", {"bench", "write", "--object-size", "12 apples"}},
         {"--size", {"gen", "--count", "1", "--size", "-5"}},
         {"--segment-size", {"transfer-peer", "--segment-size", "1PB"}}}) {
    const auto r = run_spillway(args);
    CHECK_MESSAGE(r.exit_code == 2, option);
    CHECK_MESSAGE(r.err.find(option) != std::string::npos, option, ": ", r.err);
    CHECK_MESSAGE(r.err.find("is not a size") != std::string::npos, option, ": ", r.err);
  }
}

TEST_CASE("bench --plot draws the figures as a PNG beside their json") {
  if (::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") != 0)
    return test::skip_test("python3-matplotlib is not installed");
  test::temp_dir dir;
  const auto png = dir.path() / "write.png";
  const auto r = run_spillway({"bench", "write", "--object-size", "1MiB", "--total", "8MiB",
                               "--runs", "1", "--no-fio", "--dir", dir.path().string(),
                               "--plot", png.string()});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(std::filesystem::file_size(dir.path() / "write.json") > 0);
  std::ifstream in{png, std::ios::binary};
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  CHECK(magic == "\x89PNG\r\n\x1a\n");
  CHECK(std::filesystem::file_size(png) > 10000);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway
