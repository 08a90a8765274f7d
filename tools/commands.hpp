// The `spillway` subcommands that are more than a few lines.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace spillway {

// Runs a node until SIGINT or SIGTERM, then stops it cleanly; returns the exit code.
int run_serve(const node_config& config);

// Starts a node on the default config in a temporary data dir, prints the effective
// config and the doctor report, and shuts it down.
// `metrics`: where to write the reading node's /metrics text at the end (empty: nowhere).
int run_demo(const std::string& metrics);

// The bucket store from the shell (tools/store_commands.cpp).
struct gen_options {
  std::uint64_t count = 0;
  std::uint64_t size = 0;
  std::uint64_t seed = 1;
  std::string prefix = "gen-";
  bool log_acked = false;  // print "acked KEY" per acknowledged key, for crash tests
  std::uint64_t keys_per_put = 0;  // 0: about 16 MiB of values a put
  std::size_t in_flight = 5;       // puts not yet answered, at most
};
int run_put(const node_config& config, const std::string& key, const std::string& file);
int run_get(const node_config& config, const std::string& key);
int run_exists(const node_config& config, const std::vector<std::string>& keys);
int run_remove(const node_config& config, const std::vector<std::string>& keys);
std::string read_input(const std::string& file);  // FILE, or stdin for "-"
// "present KEY" or "absent KEY" per key, then "prefix N": how many leading keys are present.
int print_exists(const std::vector<std::string>& keys, const std::vector<std::uint8_t>& present);

// The same against running nodes (tools/cluster_commands.cpp), through spillway::client:
// the nodes, and the certificate, key and CA to reach them with when they speak TLS.
struct remote_nodes {
  cluster_section cluster;
  security_section security;
};
int run_remote_put(const remote_nodes& nodes, const std::string& key, std::string value);
int run_remote_get(const remote_nodes& nodes, const std::string& key);
int run_remote_exists(const remote_nodes& nodes, const std::vector<std::string>& keys);
int run_remote_remove(const remote_nodes& nodes, const std::vector<std::string>& keys);
int run_remote_stats(const remote_nodes& nodes);
int run_gen(const node_config& config, const gen_options& options);
int run_inspect(const node_config& config, bool verify);

// Benchmarks (tools/bench_*.cpp). Rates are GB/s (10^9 bytes per second).

// Draws a bench's --json file as a PNG (tools/bench_plot.cpp); returns the exit code.
int plot_bench(const std::string& json, const std::string& png);

struct bench_write_options {
  std::vector<std::uint64_t> object_sizes{1887436, 131072};  // 1.8 MiB and 128 KiB
  std::uint64_t total = 2ull << 30;                          // bytes per run
  unsigned runs = 3;
  bool fio = true;
  std::string json;                                          // file for --json, or ""
  std::filesystem::path dir = "/var/tmp";                    // on the disk under test
};
int run_bench_write(const bench_write_options& options);

struct bench_read_options {
  std::vector<std::uint64_t> object_sizes{1887436, 131072};
  std::uint64_t dataset_bytes = 8ull << 30;
  std::uint64_t batch_bytes = 430000000;                     // one BatchGet
  std::vector<unsigned> concurrency{1, 2, 4};                // batches at once
  std::uint64_t arena_bytes = 4ull << 30;                    // holds 4 batches at once
  unsigned runs = 3;
  bool fio = true;
  bool verify = false;                                       // every byte, at the end
  bool keep_data = false;
  std::uint64_t seed = 1;
  std::string json;
  std::string metrics;  // the reading node's /metrics text, after its last round
  std::filesystem::path dir = "/var/tmp";
};
int run_bench_read(const bench_read_options& options);

struct bench_store_options {
  std::uint64_t keys = 1000000;
  std::uint64_t buckets = 10000;
  std::filesystem::path dir = "/var/tmp";
};
int run_bench_store(const bench_store_options& options);

// A process that owns one segment and serves it over tcp (tools/transfer_peer.cpp).
// From `config`: transfer.control_port and the tcp server's [fault] keys.
struct transfer_peer_options {
  std::string host = "127.0.0.1";
  std::uint64_t segment_size = 64ull << 20;
  std::vector<std::string> export_to;  // transfer identities that may reach the segments
};
int run_transfer_peer(const node_config& config, const transfer_peer_options& options);

struct bench_transfer_options {
  // Even, so each contender goes first as often; 20 so the median's 95 % interval drops
  // the 5 lowest and 5 highest runs: the gain is 1-3 % here, the noise +-15 % a run.
  unsigned runs = 20;
  std::string json;                     // file for --json, or ""
  std::vector<std::string> cases;       // "200MB/5000", ...; empty = the whole table
  std::vector<std::string> transports;  // "local", "tcp"; empty = both
};
int run_bench_transfer(const bench_transfer_options& options);

// The seeded chaos soak (tools/soak.cpp): the schedule of `seed` (random when none
// given, and printed) until `ops` operations (0: no bound) or `seconds` pass; exit 1
// with every finding and the command that replays it.
struct soak_options {
  std::uint64_t seconds = 60;
  std::optional<std::uint64_t> seed;
  std::uint64_t ops = 0;
  std::string log;                         // one line per scheduled operation, or ""
  std::filesystem::path dir = "/var/tmp";  // where its temp dir (and mount) goes
  std::string node_log = "off";  // the node's log_level: its errors are the faults' own
};
int run_soak(const soak_options& options);

// `bench e2e` (tools/bench_e2e.cpp): serve children, a client's get_into against the
// read and tcp limits.
struct bench_e2e_options {
  std::vector<std::uint64_t> object_sizes{1887436, 131072};
  std::uint64_t dataset_bytes = 2ull << 30;   // per object size, on each cluster
  std::uint64_t batch_bytes = 430000000;      // one get_into
  std::uint64_t arena_bytes = 1ull << 30;     // each node's read.arena_size
  unsigned nodes = 1;                         // 3: also the same batch from three nodes
  unsigned runs = 5;
  std::uint64_t seed = 1;
  std::string json;
  std::filesystem::path dir = "/var/tmp";
};
int run_bench_e2e(const bench_e2e_options& options);

}  // namespace spillway
