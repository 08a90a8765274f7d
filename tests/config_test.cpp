// Tests for the config loader: a full file, the defaults, every kind of mistake an operator
// can make (each message must name file:line:column and the key), to_toml round trips, and
// the shipped example file.
#include "config/config.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using spillway::config_error;
using spillway::load_config_file;
using spillway::load_config_text;
using spillway::node_config;
using spillway::to_toml;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// The problems a load reports; empty (and a failed check) when it unexpectedly succeeds.
std::vector<std::string> problems_of(std::string_view text) {
  try {
    (void)load_config_text(text, "node.toml");
  } catch (const config_error& e) {
    return e.problems();
  }
  FAIL_CHECK("expected a config_error for:\n" << text);
  return {};
}

// The one problem a load reports.
std::string problem_of(std::string_view text) {
  const std::vector<std::string> problems = problems_of(text);
  REQUIRE(problems.size() == 1);
  return problems.front();
}

// The example's directory from this file's path; the build may pass the source root instead.
std::filesystem::path example_path() {
#ifdef SPILLWAY_SOURCE_DIR
  const std::filesystem::path root = SPILLWAY_SOURCE_DIR;
#else
  const std::filesystem::path root = std::filesystem::path(__FILE__).parent_path().parent_path();
#endif
  return root / "config" / "examples" / "node.toml";
}

// "section.key" for every key line of a TOML text, commented out ("# seed = 1") or not.
// Hand-rolled rather than std::regex, which trips GCC 12's -Wmaybe-uninitialized at -O2.
std::set<std::string> keys_written(const std::string& text) {
  const auto is_name = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == s.npos;
  };
  std::set<std::string> keys;
  std::string section;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::string_view rest = line;
    if (rest.starts_with('[') && rest.ends_with(']') && is_name(rest.substr(1, rest.size() - 2))) {
      section = rest.substr(1, rest.size() - 2);
      continue;
    }
    if (rest.starts_with("# ")) rest.remove_prefix(2);
    const std::size_t equals = rest.find(" = ");
    if (equals != rest.npos && is_name(rest.substr(0, equals))) {
      keys.insert(section + "." + std::string(rest.substr(0, equals)));
    }
  }
  return keys;
}

constexpr std::string_view full_file = R"(# every key, none at its default
[node]
id = 42
listen = "10.0.0.1:9000"
metrics_listen = "127.0.0.1:9400"
log_level = "debug"
log_format = "json"
scheduler_threads = 12

[storage]
data_dir = "/mnt/nvme0/spillway"
bucket_size_limit = "128MiB"
bucket_keys_limit = 1000
seal_after_ms = 250
max_total_size = "2 TiB"
eviction = "lru"
quarantine = false
file_mode = "0640"

[read]
engine = "posix"
mode = "group"
readers = 6
window = 64
window_bytes = "16MiB"
queue_depth = 128
arena_size = "4GiB"
arena_chunk = "512MiB"
arena_pages = "hugetlb"
lease_ms = 2500
timeout_ms = 60000

[transfer]
transport = "rdma"
listen = "0.0.0.0:7500"
control_port = 7501
slicing = "naive"
slicers = 3
slice_size = 131072
fragment_limit = "8 KiB"
watermark = 1024
retries = 3
slice_timeout_ms = 2000
tcp_lanes = 8
rdma_qps = 6
rdma_devices = ["mlx5_0", "mlx5_1"]
rdma_port = 2
rdma_gid_index = 3

[cluster]
nodes = ["10.0.0.1:7400", "10.0.0.2:7400", "[::1]:7400"]
request_timeout_ms = 20000

[fault]
enabled = true
seed = 99
read_error_rate = 0.25
short_read_rate = 0.5
corrupt_rate = 1
ring_submit_failure_rate = 0.125
fail_registration = true
refuse_o_direct = true
read_error_keys = ["k1"]
short_read_keys = ["k2", "k3"]
tcp_drop_lane_after_slices = 300
tcp_kill_after_slices = 400
)";

}  // namespace

TEST_SUITE("config") {
  TEST_CASE("a full file sets every key") {
    const node_config c = load_config_text(full_file, "full.toml");
    CHECK(c.node.id == 42);
    CHECK(c.node.listen == "10.0.0.1:9000");
    CHECK(c.node.metrics_listen == "127.0.0.1:9400");
    CHECK(c.node.log_level == "debug");
    CHECK(c.node.log_format == "json");
    CHECK(c.node.scheduler_threads == 12);
    CHECK(c.storage.data_dir == "/mnt/nvme0/spillway");
    CHECK(c.storage.bucket_size_limit == 128 * MiB);
    CHECK(c.storage.bucket_keys_limit == 1000);
    CHECK(c.storage.seal_after_ms == 250);
    CHECK(c.storage.max_total_size == std::uint64_t{2} << 40);
    CHECK(c.storage.eviction == "lru");
    CHECK_FALSE(c.storage.quarantine);
    CHECK(c.storage.file_mode == 0640);
    CHECK(c.read.engine == "posix");
    CHECK(c.read.mode == "group");
    CHECK(c.read.readers == 6);
    CHECK(c.read.window == 64);
    CHECK(c.read.window_bytes == 16 * MiB);
    CHECK(c.read.queue_depth == 128);
    CHECK(c.read.arena_size == 4096 * MiB);
    CHECK(c.read.arena_chunk == 512 * MiB);
    CHECK(c.read.arena_pages == "hugetlb");
    CHECK(c.read.lease_ms == 2500);
    CHECK(c.read.timeout_ms == 60000);
    CHECK(c.transfer.transport == "rdma");
    CHECK(c.transfer.listen == "0.0.0.0:7500");
    CHECK(c.transfer.control_port == 7501);
    CHECK(c.transfer.slicing == "naive");
    CHECK(c.transfer.slicers == 3);
    CHECK(c.transfer.slice_size == 131072);
    CHECK(c.transfer.fragment_limit == 8192);
    CHECK(c.transfer.watermark == 1024);
    CHECK(c.transfer.retries == 3);
    CHECK(c.transfer.slice_timeout_ms == 2000);
    CHECK(c.transfer.tcp_lanes == 8);
    CHECK(c.transfer.rdma_qps == 6);
    CHECK(c.transfer.rdma_devices == std::vector<std::string>{"mlx5_0", "mlx5_1"});
    CHECK(c.transfer.rdma_port == 2);
    CHECK(c.transfer.rdma_gid_index == 3);
    CHECK(c.cluster.nodes ==
          std::vector<std::string>{"10.0.0.1:7400", "10.0.0.2:7400", "[::1]:7400"});
    CHECK(c.cluster.request_timeout_ms == 20000);
    CHECK(c.fault.enabled);
    CHECK(c.fault.seed == 99);
    CHECK(c.fault.read_error_rate == 0.25);
    CHECK(c.fault.short_read_rate == 0.5);
    CHECK(c.fault.corrupt_rate == 1.0);  // an integer where a double is expected is fine
    CHECK(c.fault.ring_submit_failure_rate == 0.125);
    CHECK(c.fault.fail_registration);
    CHECK(c.fault.refuse_o_direct);
    CHECK(c.fault.read_error_keys == std::vector<std::string>{"k1"});
    CHECK(c.fault.short_read_keys == std::vector<std::string>{"k2", "k3"});
    CHECK(c.fault.tcp_drop_lane_after_slices == 300);
    CHECK(c.fault.tcp_kill_after_slices == 400);
  }

  TEST_CASE("empty text gives the defaults with per-core counts resolved") {
    const node_config c = load_config_text("", "empty.toml");
    CHECK(c.read.readers >= 1);
    CHECK(c.read.readers <= 8);
    CHECK(c.transfer.slicers >= 1);
    CHECK(c.transfer.slicers <= 4);
    node_config expected;
    expected.read.readers = c.read.readers;
    expected.transfer.slicers = c.transfer.slicers;
    CHECK(c == expected);
  }

  TEST_CASE("rdma uses port 1 and picks its GID unless told otherwise") {
    const node_config c = load_config_text("", "empty.toml");
    CHECK(c.transfer.rdma_port == 1);
    CHECK(c.transfer.rdma_gid_index == -1);
    CHECK(load_config_text("[transfer]\nrdma_gid_index = -1\n", "node.toml") == c);
    CHECK(load_config_text("[transfer]\nrdma_gid_index = 0\n", "node.toml")
              .transfer.rdma_gid_index == 0);
    CHECK(load_config_text("[transfer]\nrdma_gid_index = 255\nrdma_port = 255\n", "node.toml")
              .transfer.rdma_gid_index == 255);
  }

  TEST_CASE("rdma port and GID index outside what verbs can name are refused") {
    CHECK(problem_of("[transfer]\nrdma_port = 0\n") ==
          "node.toml:2:13: transfer.rdma_port: must be an integer from 1 to 255, got 0");
    CHECK(problem_of("[transfer]\nrdma_port = 256\n") ==
          "node.toml:2:13: transfer.rdma_port: must be an integer from 1 to 255, got 256");
    CHECK(problem_of("[transfer]\nrdma_gid_index = -2\n") ==
          "node.toml:2:18: transfer.rdma_gid_index: must be an integer from -1 to 255, got -2");
    CHECK(problem_of("[transfer]\nrdma_gid_index = 256\n") ==
          "node.toml:2:18: transfer.rdma_gid_index: must be an integer from -1 to 255, got 256");
    CHECK(problem_of("[transfer]\nrdma_gid_index = \"auto\"\n") ==
          "node.toml:2:18: transfer.rdma_gid_index: must be an integer from -1 to 255, "
          "got string \"auto\"");
    CHECK(problem_of("[transfer]\nrdma_gid_index = -1.0\n") ==
          "node.toml:2:18: transfer.rdma_gid_index: must be an integer from -1 to 255, "
          "got floating-point -1.0");
  }

  TEST_CASE("an explicit readers count is kept") {
    const node_config c = load_config_text("[read]\nreaders = 64\n", "node.toml");
    CHECK(c.read.readers == 64);
  }

  TEST_CASE("an unknown key is named with the known keys of its section") {
    CHECK(problem_of("[read]\nwindw = 3\n") ==
          "node.toml:2:1: unknown key 'read.windw' (known keys in [read]: engine, mode, readers, "
          "window, window_bytes, queue_depth, arena_size, arena_chunk, arena_pages, memory_slots, "
          "lease_ms, timeout_ms)");
    CHECK(problem_of("[transfer]\nslice.size = 3\n").starts_with(
        "node.toml:2:1: unknown key 'transfer.slice' (known keys in [transfer]: transport,"));
  }

  TEST_CASE("an unknown section is named with the known sections") {
    const std::string known = "(known sections: node, storage, read, transfer, cluster, security, fault)";
    CHECK(problem_of("[node]\nid = 2\n\n[reed]\nwindow = 3\n") ==
          "node.toml:4:2: unknown section 'reed' " + known);
    CHECK(problem_of("[node]\nid = 2\n\n[[read]]\nwindow = 3\n") ==
          "node.toml:4:1: read: must be a table (the [read] section), "
          "got array [ { window = 3 } ]");
    CHECK(problem_of("verbose = true\n") ==
          "node.toml:1:1: unknown top-level key 'verbose' " + known);
  }

  TEST_CASE("a wrong type says what is allowed") {
    CHECK(problem_of("[storage]\nquarantine = \"yes\"\n") ==
          "node.toml:2:14: storage.quarantine: must be true or false, got string \"yes\"");
    CHECK(problem_of("[storage]\neviction = 1\n") ==
          "node.toml:2:12: storage.eviction: must be one of \"fifo\", \"lru\", got integer 1");
    CHECK(problem_of("[cluster]\nnodes = \"a:1\"\n") ==
          "node.toml:2:9: cluster.nodes: must be an array of distinct \"host:port\" strings, "
          "each with a port from 1 to 65535, got string \"a:1\"");
    CHECK(problem_of("[transfer]\nrdma_devices = [\"mlx5_0\", 7]\n") ==
          "node.toml:2:27: transfer.rdma_devices[1]: must be a non-empty string, got integer 7");
    CHECK(problem_of("[read]\narena_size = 1.5\n") ==
          "node.toml:2:14: read.arena_size: must be a size from 2MiB to 1TiB, a multiple of 2MiB "
          "(bytes, or a string such as \"64KiB\"), got floating-point 1.5");
    CHECK(problem_of("[fault]\nenabled = true\nseed = \"7\"\n") ==
          "node.toml:3:8: fault.seed: must be an integer from 0 to 9223372036854775807, "
          "got string \"7\"");
  }

  TEST_CASE("a float where an integer belongs is an error and not a silent default") {
    CHECK(problem_of("[read]\nwindow = 32.0\n") ==
          "node.toml:2:10: read.window: must be an integer from 1 to 4096, "
          "got floating-point 32.0");
    CHECK(problem_of("[node]\n\nid = 2.5\n") ==
          "node.toml:3:6: node.id: must be an integer from 1 to 65535, got floating-point 2.5");
  }

  TEST_CASE("a bad size string says how to write a size") {
    CHECK(problem_of("[read]\narena_size = \"12 parsecs\"\n") ==
          "node.toml:2:14: read.arena_size: \"12 parsecs\" is not a size "
          "(use bytes, or a number with B, KiB, MiB, GiB or TiB)");
    CHECK(problem_of("[transfer]\nslice_size = \"1.5MiB\"\n")
              .starts_with("node.toml:2:14: transfer.slice_size: \"1.5MiB\" is not a size"));
  }

  TEST_CASE("an out of range value names the range") {
    CHECK(problem_of("[node]\nid = 7\n[read]\nwindow = 0\n") ==
          "node.toml:4:10: read.window: must be an integer from 1 to 4096, got 0");
    CHECK(problem_of("[node]\nid = -3\n") ==
          "node.toml:2:6: node.id: must be an integer from 1 to 65535, got -3");
    CHECK(problem_of("[storage]\nbucket_size_limit = \"32KiB\"\n") ==
          "node.toml:2:21: storage.bucket_size_limit: must be a size from 64KiB to 16GiB, "
          "got \"32KiB\"");
    CHECK(problem_of("[read]\narena_size = \"3MiB\"\n") ==
          "node.toml:2:14: read.arena_size: must be a size from 2MiB to 1TiB, "
          "a multiple of 2MiB, got \"3MiB\"");
    CHECK(problem_of("[fault]\nenabled = true\ncorrupt_rate = 1.5\n") ==
          "node.toml:3:16: fault.corrupt_rate: must be a number from 0.0 to 1.0, got 1.5");
    CHECK(problem_of("[node]\nlisten = \"localhost\"\n") ==
          "node.toml:2:10: node.listen: must be \"\" or \"host:port\" with a port from 0 to "
          "65535, got \"localhost\"");
    CHECK(problem_of("[transfer]\nlisten = \"\"\n") ==
          "node.toml:2:10: transfer.listen: must be \"host:port\" with a port from 0 to 65535, "
          "got \"\"");
    CHECK(problem_of("[storage]\ndata_dir = \"\"\n") ==
          "node.toml:2:12: storage.data_dir: must be a non-empty string, got \"\"");
  }

  TEST_CASE("cluster nodes need a port and may not repeat") {
    const std::vector<std::string> problems =
        problems_of("[cluster]\nnodes = [\"a:1\", \"b:0\", \"a:1\", \"::1:5\"]\n");
    REQUIRE(problems.size() == 3);
    CHECK(problems[0] == "node.toml:2:17: cluster.nodes[1]: must be \"host:port\" with a port "
                         "from 1 to 65535, got string \"b:0\"");
    CHECK(problems[1] == "node.toml:2:24: cluster.nodes[2]: \"a:1\" is listed twice (first as "
                         "cluster.nodes[0]); each node must appear once");
    CHECK(problems[2].starts_with("node.toml:2:31: cluster.nodes[3]: must be \"host:port\""));
    CHECK(load_config_text("[node]\nlisten = \"\"\n", "node.toml").node.listen.empty());
  }

  TEST_CASE("a value outside the choices lists them") {
    CHECK(problem_of("[storage]\neviction = \"random\"\n") ==
          "node.toml:2:12: storage.eviction: must be one of \"fifo\", \"lru\", got \"random\"");
    CHECK(problem_of("[node]\nlog_level = \"INFO\"\n") ==
          "node.toml:2:13: node.log_level: must be one of \"trace\", \"debug\", \"info\", "
          "\"warn\", \"error\", \"off\", got \"INFO\"");
  }

  TEST_CASE("a file mode that others could write, or the node could not, is refused") {
    for (const char* mode : {"0666", "0660", "0400", "0700", "0755", "600x", "", "01600"})
      CHECK_MESSAGE(problem_of("[storage]\nfile_mode = \"" + std::string{mode} + "\"\n")
                      .find("storage.file_mode: must be octal permissions") != std::string::npos,
                    mode);
    CHECK(load_config_text("[storage]\nfile_mode = \"644\"\n", "t").storage.file_mode == 0644);
  }

  TEST_CASE("contradicting keys are both named at the one set later") {
    CHECK(problem_of("[read]\narena_size = \"64MiB\"\narena_chunk = \"128MiB\"\n") ==
          "node.toml:3:15: read.arena_chunk (128MiB) must be at most read.arena_size (64MiB)");
    CHECK(problem_of("[read]\narena_chunk = \"128MiB\"\narena_size = \"64MiB\"\n") ==
          "node.toml:3:14: read.arena_chunk (128MiB) must be at most read.arena_size (64MiB)");
    CHECK(problem_of("[transfer]\nslice_size = \"16KiB\"\n") ==
          "node.toml:2:14: transfer.fragment_limit (16KiB) must be smaller than "
          "transfer.slice_size (16KiB)");
    const node_config c = load_config_text(
        "[read]\narena_size = \"64MiB\"\narena_chunk = \"64MiB\"\n", "node.toml");
    CHECK(c.read.arena_chunk == 64 * MiB);
  }

  // Before, `arena_size = "64MiB"` alone was refused: the chunk kept its 1 GiB default.
  TEST_CASE("a default that depends on another key follows it: arena_chunk follows arena_size") {
    for (const char* size : {"64MiB", "512MiB"}) {
      const auto c = load_config_text("[read]\narena_size = \"" + std::string{size} + "\"\n", "t");
      CHECK_MESSAGE(c.read.arena_chunk == c.read.arena_size, size);
    }
    CHECK(load_config_text("[read]\narena_size = \"4GiB\"\n", "t").read.arena_chunk == 1024 * MiB);
    CHECK(load_config_text("", "t").read.arena_chunk == 1024 * MiB);
  }

  // 64 GiB in 2 MiB chunks would be 32768 chunks, each a registered buffer of every ring,
  // and read.memory_slots (64) more are kept for caller memory.
  TEST_CASE("an arena cut into more chunks than io_uring registers buffers is refused") {
    CHECK(problem_of("[read]\narena_size = \"64GiB\"\narena_chunk = \"2MiB\"\n") ==
          "node.toml:3:15: read.arena_size (64GiB) in read.arena_chunk (2MiB) pieces is 32768 "
          "chunks, more than the 16320 buffers io_uring registers beside read.memory_slots: "
          "make read.arena_chunk at least 6MiB");
    CHECK(problem_of("[read]\narena_chunk = \"2MiB\"\narena_size = \"33GiB\"\n") ==
          "node.toml:3:14: read.arena_size (33GiB) in read.arena_chunk (2MiB) pieces is 16896 "
          "chunks, more than the 16320 buffers io_uring registers beside read.memory_slots: "
          "make read.arena_chunk at least 4MiB");
    CHECK(problem_of("[read]\narena_size = \"32GiB\"\narena_chunk = \"2MiB\"\n") ==
          "node.toml:3:15: read.arena_size (32GiB) in read.arena_chunk (2MiB) pieces is 16384 "
          "chunks, more than the 16320 buffers io_uring registers beside read.memory_slots: "
          "make read.arena_chunk at least 4MiB");
    const node_config c = load_config_text(
        "[read]\narena_size = \"32GiB\"\narena_chunk = \"2MiB\"\nmemory_slots = 0\n", "node.toml");
    CHECK(c.read.arena_size / c.read.arena_chunk == 16384);
  }

  TEST_CASE("fault keys are refused unless fault.enabled is true") {
    const std::string why = " (set fault.enabled = true to use fault injection)";
    const std::vector<std::string> problems =
        problems_of("[fault]\nseed = 5\nread_error_rate = 0.5\n");
    REQUIRE(problems.size() == 2);
    CHECK(problems[0] ==
          "node.toml:2:1: fault.seed: refused while fault.enabled is not true" + why);
    CHECK(problems[1] ==
          "node.toml:3:1: fault.read_error_rate: refused while fault.enabled is not true" + why);
    CHECK(problem_of("[fault]\nenabled = false\nfail_registration = true\n") ==
          "node.toml:3:1: fault.fail_registration: refused while fault.enabled is not true" + why);
    // A gate of the wrong type is reported once, not once per key behind it.
    CHECK(problem_of("[fault]\nenabled = \"yes\"\nseed = 3\n") ==
          "node.toml:2:11: fault.enabled: must be true or false, got string \"yes\"");
    CHECK_FALSE(load_config_text("[fault]\nenabled = false\n", "node.toml").fault.enabled);
  }

  TEST_CASE("a TOML syntax error names file line and column" * doctest::test_suite("fault")) {
    CHECK(problem_of("[read]\nwindow = [1, 2\nmode = \"group\"\n") ==
          "node.toml:3:1: Error while parsing array: expected comma or closing ']', saw 'm'");
    CHECK(problem_of("[read]\nwindow = 1\nwindow = 2\n")
              .starts_with("node.toml:3:10: Error while parsing key-value pair: cannot redefine"));
  }

  TEST_CASE("a missing or unreadable file is one problem naming the path") {
    const std::filesystem::path missing =
        std::filesystem::temp_directory_path() / "spillway-no-such-dir" / "node.toml";
    try {
      (void)load_config_file(missing);
      FAIL("loaded a missing file");
    } catch (const config_error& e) {
      REQUIRE(e.problems().size() == 1);
      CHECK(std::string(e.what()) ==
            missing.string() + ": cannot read config file: No such file or directory");
    }
    const std::filesystem::path directory = std::filesystem::temp_directory_path();
    const std::string expected = directory.string() + ": cannot read config file: Is a directory";
    CHECK_THROWS_WITH_AS((void)load_config_file(directory), expected.c_str(), config_error);
  }

  TEST_CASE("every problem in a file is reported in file order") {
    const std::string text =
        "[read]\n"
        "window = 0\n"                   // 2: out of range
        "mode = \"batch\"\n"             // 3: not a choice
        "[storage]\n"
        "eviction = \"lru\"\n"
        "bucket_size_limit = 2.0\n"      // 6: wrong type
        "colour = \"blue\"\n"            // 7: unknown key
        "[fault]\n"
        "seed = 3\n";                    // 9: gated
    try {
      (void)load_config_text(text, "multi.toml");
      FAIL("loaded a broken file");
    } catch (const config_error& e) {
      const std::vector<std::string>& p = e.problems();
      REQUIRE(p.size() == 5);
      CHECK(p[0].starts_with("multi.toml:2:10: read.window: "));
      CHECK(p[1].starts_with("multi.toml:3:8: read.mode: "));
      CHECK(p[2].starts_with("multi.toml:6:21: storage.bucket_size_limit: "));
      CHECK(p[3].starts_with("multi.toml:7:1: unknown key 'storage.colour'"));
      CHECK(p[4].starts_with("multi.toml:9:1: fault.seed: "));
      CHECK(std::string(e.what()) ==
            p[0] + "\n" + p[1] + "\n" + p[2] + "\n" + p[3] + "\n" + p[4]);
    }
  }

  TEST_CASE("to_toml of the defaults loads back equal") {
    const node_config defaults = load_config_text("", "empty.toml");
    const std::string text = to_toml(defaults);
    CHECK(load_config_text(text, "defaults.toml") == defaults);
    CHECK(text.find("\n[read]\n") != std::string::npos);
    CHECK(text.find("\narena_size = \"1GiB\"\n") != std::string::npos);
    CHECK(text.find("# reads in flight per reader (an integer from 1 to 4096)\nwindow = 32\n") !=
          std::string::npos);
    // Behind a closed gate the keys are written, but commented out, so the text loads.
    CHECK(text.find("\n# seed = 1\n") != std::string::npos);
    // A bare node_config has unresolved per-core counts; they stay out, so it still loads.
    CHECK(load_config_text(to_toml(node_config{}), "bare.toml") == defaults);
  }

  TEST_CASE("to_toml of a non-default config loads back equal") {
    node_config c = load_config_text(full_file, "full.toml");
    c.storage.data_dir = "/srv/odd \"dir\"\\with\ttabs\nand newline";
    c.storage.max_total_size = 1000001;
    c.fault.read_error_rate = 0.1;
    c.fault.short_read_rate = 1e-7;
    c.fault.read_error_keys = {"k\"1", "caf\xc3\xa9", "x\x01y"};
    const std::string text = to_toml(c);
    CHECK(text.find("\nenabled = true\n") != std::string::npos);
    CHECK(text.find("\nread_error_rate = 0.1\n") != std::string::npos);
    CHECK(load_config_text(text, "again.toml") == c);
  }

  TEST_CASE("the example file is complete and valid") {
    const std::filesystem::path path = example_path();
    INFO("example: " << path.string());
    const node_config example = load_config_file(path);
    CHECK(example.read.readers >= 1);
    std::ifstream file(path);
    const std::string text{std::istreambuf_iterator<char>(file), {}};
    const std::set<std::string> written = keys_written(to_toml(example));
    const std::set<std::string> in_example = keys_written(text);
    CHECK(written.size() > 40);
    for (const std::string& key : written) CHECK_MESSAGE(in_example.count(key) == 1, key);
  }
}
