// The `spillway` command: serve a node, run the demo, print the config, check the
// machine, and use the bucket store from the shell. Exit codes: 0 success, 1 the work
// failed, 2 bad usage or bad config.
//
// Build: tools/run.sh build   (the binary is build/release/spillway)
#include <filesystem>
#include <optional>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "config/config.hpp"
#include "config/endpoint.hpp"
#include "config/size.hpp"
#include "runtime/doctor.hpp"
#include "runtime/node.hpp"
#include "tools/commands.hpp"

namespace {

constexpr int exit_usage = 2;

struct config_source {
  std::string path;      // -c
  std::string data_dir;  // --data-dir, for the store commands
  std::string cluster;   // --cluster FILE: the nodes of its [cluster]
  std::string node;      // --node host:port
};

// The nodes a remote command asks, and the TLS settings to reach them with: those of
// the --cluster file, or with --node those of -c (if given); nullopt: no node named,
// the local data dir it is.
std::optional<spillway::remote_nodes> remote_nodes(const config_source& source) {
  if (!source.node.empty()) {
    if (!spillway::parse_endpoint(source.node))
      throw CLI::ValidationError("--node", "\"" + source.node + "\" is not host:port");
    spillway::remote_nodes one;
    one.cluster.nodes = {source.node};
    if (!source.path.empty()) one.security = spillway::load_config_file(source.path).security;
    return one;
  }
  if (source.cluster.empty()) return std::nullopt;
  auto file = spillway::load_config_file(source.cluster);
  if (file.cluster.nodes.empty())
    throw spillway::config_error({source.cluster + ": cluster.nodes is empty: no node to ask"});
  return spillway::remote_nodes{file.cluster, file.security};
}

void add_remote_options(CLI::App* sub, config_source& source) {
  auto* cluster = sub->add_option("--cluster", source.cluster,
                                  "Ask the nodes of this TOML's [cluster] nodes");
  sub->add_option("--node", source.node, "Ask this one node (host:port)")->excludes(cluster);
}

// With -c, the file; without, the defaults (an empty file is a valid node).
spillway::node_config load(const config_source& source) {
  auto config = source.path.empty() ? spillway::load_config_text("", "<defaults>")
                                    : spillway::load_config_file(source.path);
  if (!source.data_dir.empty()) config.storage.data_dir = source.data_dir;
  return config;
}

// The store commands run a private node: no port, and only warnings on stderr.
spillway::node_config store_node(const config_source& source) {
  auto config = load(source);
  config.node.listen = "";
  config.node.log_level = "warn";
  return config;
}

int doctor_command(const spillway::node_config& config) {
  const auto report = spillway::run_doctor(config);
  std::cout << spillway::format_report(report);
  if (report.can_run()) return 0;
  std::cerr << "spillway doctor: this node cannot run here (see the fail lines)\n";
  return 1;
}

void add_config_option(CLI::App* sub, config_source& source) {
  sub->add_option("-c,--config", source.path, "Node config (TOML)");
}

void add_store_options(CLI::App* sub, config_source& source) {
  add_config_option(sub, source);
  sub->add_option("--data-dir", source.data_dir, "Data dir (instead of the config's)");
}

// Every size on the command line takes the config file's forms ("4GiB", "128KiB" or
// bytes), through the same parser, turned into bytes before CLI11 reads the number.
const CLI::Validator size_text{
  [](std::string& text) {
    const auto bytes = spillway::parse_size(text);
    if (!bytes) return "'" + text + "' is not a size (bytes, or KiB, MiB, GiB, TiB)";
    text = std::to_string(*bytes);
    return std::string{};
  },
  "SIZE"};

// Runs a bench, then draws its --json as `plot` when asked (beside the picture when
// no --json was given).
template <class Options>
int plotted(int (*bench)(const Options&), Options& options, const std::string& plot) {
  if (!plot.empty() && options.json.empty())
    options.json = std::filesystem::path{plot}.replace_extension(".json").string();
  const int code = bench(options);
  return code != 0 || plot.empty() ? code : spillway::plot_bench(options.json, plot);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spillway: the SSD tier of a KV-cache node"};
  app.require_subcommand(1);
  config_source source;

  auto* serve = app.add_subcommand("serve", "Run a node until SIGINT or SIGTERM");
  serve->add_option("-c,--config", source.path, "Node config (TOML)")->required();
  auto* demo = app.add_subcommand("demo", "Start a node on the defaults in a temporary dir");
  std::string demo_metrics;
  const std::string metrics_help = "Write the reading node's /metrics text here at the end";
  demo->add_option("--metrics", demo_metrics, metrics_help);
  auto* config = app.add_subcommand("config", "Show the effective config");
  bool print = false;
  config->add_flag("--print", print, "Print it as TOML, every default filled in")->required();
  add_config_option(config, source);
  auto* doctor = app.add_subcommand("doctor", "Check this machine against the config");
  add_config_option(doctor, source);

  std::string key, file = "-";
  auto* put = app.add_subcommand("put", "Store the value in FILE (or stdin) under KEY");
  put->add_option("KEY", key, "The key")->required();
  put->add_option("FILE", file, "The value's file; - for stdin");
  add_store_options(put, source);
  auto* get = app.add_subcommand("get", "Write KEY's value to stdout");
  get->add_option("KEY", key, "The key")->required();
  add_store_options(get, source);
  add_remote_options(put, source);
  add_remote_options(get, source);
  std::vector<std::string> keys;
  auto* exists = app.add_subcommand("exists", "Say which KEYs are present, and the prefix");
  exists->add_option("KEY", keys, "The keys, in order")->required();
  add_store_options(exists, source);
  add_remote_options(exists, source);
  auto* rm = app.add_subcommand("rm", "Remove KEYs; prints how many copies went");
  rm->add_option("KEY", keys, "The keys")->required();
  add_store_options(rm, source);
  add_remote_options(rm, source);
  auto* stats = app.add_subcommand("stats", "A running node's figures, as /metrics has them");
  add_remote_options(stats, source);
  add_config_option(stats, source);  // with --node: the TLS settings to reach it
  spillway::gen_options gen_opts;
  auto* gen = app.add_subcommand("gen", "Write COUNT generated values through the put path");
  gen->add_option("--count", gen_opts.count, "How many keys")->required();
  gen->add_option("--size", gen_opts.size, "Bytes per value: 65536, 128KiB, ...")
    ->required()->transform(size_text);
  gen->add_option("--seed", gen_opts.seed, "Seeds the values (default 1)");
  gen->add_option("--prefix", gen_opts.prefix, "Key prefix (default gen-)");
  gen->add_flag("--log-acked", gen_opts.log_acked, "Print each acknowledged key");
  gen->add_option("--keys-per-put", gen_opts.keys_per_put,
                  "Keys in each put (default: about 16 MiB of values)");
  gen->add_option("--in-flight", gen_opts.in_flight, "Puts not yet answered, at most (default 5)")
    ->check(CLI::PositiveNumber);
  add_store_options(gen, source);
  bool verify = false;
  auto* inspect = app.add_subcommand("inspect", "Describe the data dir's buckets");
  inspect->add_flag("--verify", verify, "Read every record and check its crc");
  add_store_options(inspect, source);

  auto* bench = app.add_subcommand("bench", "Measure against the machine's limits");
  bench->require_subcommand(1);
  std::string plot;
  const std::string plot_help = "Also draw the figures as a PNG (needs python3-matplotlib)";
  spillway::bench_write_options write_opts;
  auto* bench_write = bench->add_subcommand("write", "Puts into the disk, against fio");
  bench_write->add_option("--object-size", write_opts.object_sizes, "Value bytes, each a row")
    ->transform(size_text);
  bench_write->add_option("--total", write_opts.total, "Bytes written per run")
    ->transform(size_text);
  bench_write->add_option("--runs", write_opts.runs, "Interleaved runs (median)")
    ->check(CLI::PositiveNumber);
  bench_write->add_flag("!--no-fio", write_opts.fio, "Skip the fio limit");
  bench_write->add_option("--json", write_opts.json, "Also write the figures here");
  bench_write->add_option("--plot", plot, plot_help);
  bench_write->add_option("--dir", write_opts.dir, "Where to write (default /var/tmp)");
  spillway::bench_read_options read_opts;
  auto* bench_read = bench->add_subcommand("read", "Batch gets from the disk: window, group, fio");
  bench_read->add_option("--object-size", read_opts.object_sizes, "Value bytes, each a table")
    ->transform(size_text);
  bench_read->add_option("--dataset", read_opts.dataset_bytes, "Bytes written per object size")
    ->transform(size_text);
  bench_read->add_option("--batch", read_opts.batch_bytes, "Bytes per batch get")
    ->transform(size_text);
  bench_read->add_option("--concurrency", read_opts.concurrency, "Batches at once, each a column");
  bench_read->add_option("--runs", read_opts.runs, "Interleaved runs (median)")
    ->check(CLI::PositiveNumber);
  bench_read->add_option("--arena", read_opts.arena_bytes, "read.arena_size for the node")
    ->transform(size_text);
  bench_read->add_flag("--fio,!--no-fio", read_opts.fio, "Measure fio over the same files");
  bench_read->add_flag("--verify", read_opts.verify, "Compare every byte at the end");
  bench_read->add_option("--json", read_opts.json, "Also write the figures here");
  bench_read->add_option("--metrics", read_opts.metrics, metrics_help);
  bench_read->add_option("--plot", plot, plot_help);
  bench_read->add_option("--dir", read_opts.dir, "Where to write (default /var/tmp)");
  spillway::bench_store_options store_opts;
  auto* bench_store = bench->add_subcommand("store", "Catalog bytes per key, recovery time");
  bench_store->add_option("--keys", store_opts.keys, "Keys in the catalog");
  bench_store->add_option("--buckets", store_opts.buckets, "Bucket files to recover");
  bench_store->add_option("--dir", store_opts.dir, "Where to write (default /var/tmp)");
  spillway::bench_transfer_options transfer_opts;
  auto* bench_transfer = bench->add_subcommand("transfer", "Slicing naive vs watermark");
  bench_transfer->add_option("--runs", transfer_opts.runs, "Interleaved runs (median)")
    ->check(CLI::PositiveNumber);
  bench_transfer->add_option("--json", transfer_opts.json, "Also write the figures here");
  bench_transfer->add_option("--plot", plot, plot_help);
  bench_transfer->add_option("--case", transfer_opts.cases, "Only these rows: 200MB/5000, ...");
  bench_transfer->add_option("--transport", transfer_opts.transports, "Only these: local, tcp")
    ->check(CLI::IsMember({"local", "tcp"}));
  spillway::bench_e2e_options e2e_opts;
  auto* bench_e2e = bench->add_subcommand("e2e", "get_into from serve children over tcp");
  bench_e2e->add_option("--object-size", e2e_opts.object_sizes, "Value bytes, each a table")
    ->transform(size_text);
  bench_e2e->add_option("--dataset", e2e_opts.dataset_bytes, "Bytes written per object size")
    ->transform(size_text);
  bench_e2e->add_option("--batch", e2e_opts.batch_bytes, "Bytes per get_into")
    ->transform(size_text);
  bench_e2e->add_option("--arena", e2e_opts.arena_bytes, "read.arena_size of each node")
    ->transform(size_text);
  bench_e2e->add_option("--nodes", e2e_opts.nodes, "3: the same batch from three nodes too")
    ->check(CLI::IsMember({1, 3}));
  bench_e2e->add_option("--runs", e2e_opts.runs, "Interleaved runs (median)")
    ->check(CLI::PositiveNumber);
  bench_e2e->add_option("--json", e2e_opts.json, "Also write the figures here");
  bench_e2e->add_option("--dir", e2e_opts.dir, "Where the nodes' data goes (default /var/tmp)");
  spillway::transfer_peer_options peer_opts;
  auto* peer = app.add_subcommand("transfer-peer", "Serve one segment over tcp (tests, bench)");
  peer->add_option("--segment-size", peer_opts.segment_size, "Segment bytes: 64MiB, 1GiB, ...")
    ->transform(size_text);
  peer->add_option("--host", peer_opts.host, "Address to listen on (default 127.0.0.1)");
  peer->add_option("--export-to", peer_opts.export_to,
                   "A peer's transfer identity (node::transfer_identity()) the segments are "
                   "exported to; repeat for more");
  add_config_option(peer, source);  // transfer.control_port, [fault]
  spillway::soak_options soak_opts;
  auto* soak = app.add_subcommand("soak", "Seeded chaos: operations and faults checked against "
                                          "a model of the store");
  soak->add_option("--seconds", soak_opts.seconds, "Wall time, at most (default 60)");
  soak->add_option("--seed", soak_opts.seed, "The schedule's seed (default: a random one)");
  soak->add_option("--ops", soak_opts.ops, "Operations, at most (default: no bound)");
  soak->add_option("--log", soak_opts.log, "Write one line per scheduled operation here");
  soak->add_option("--dir", soak_opts.dir, "Where its temp dir goes (default /var/tmp)");
  soak->add_option("--node-log", soak_opts.node_log, "The node's log level (default off)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help (code 0) or the error and a hint
    return code == 0 ? 0 : exit_usage;
  }

  try {
    if (*demo) return spillway::run_demo(demo_metrics);
    if (*serve) return spillway::run_serve(load(source));
    if (*config) std::cout << spillway::to_toml(load(source));
    if (*doctor) return doctor_command(load(source));
    const auto remote = remote_nodes(source);
    if (*put && remote) return spillway::run_remote_put(*remote, key, spillway::read_input(file));
    if (*put) return spillway::run_put(store_node(source), key, file);
    if (*get && remote) return spillway::run_remote_get(*remote, key);
    if (*get) return spillway::run_get(store_node(source), key);
    if (*exists && remote) return spillway::run_remote_exists(*remote, keys);
    if (*exists) return spillway::run_exists(store_node(source), keys);
    if (*rm && remote) return spillway::run_remote_remove(*remote, keys);
    if (*rm) return spillway::run_remove(store_node(source), keys);
    if (*stats && remote) return spillway::run_remote_stats(*remote);
    if (*stats) throw CLI::ValidationError("stats", "needs --node host:port or --cluster FILE");
    if (*gen) return spillway::run_gen(store_node(source), gen_opts);
    if (*inspect) return spillway::run_inspect(store_node(source), verify);
    if (*bench_write) return plotted(spillway::run_bench_write, write_opts, plot);
    if (*bench_store) return spillway::run_bench_store(store_opts);
    if (*bench_read) return plotted(spillway::run_bench_read, read_opts, plot);
    if (*bench_transfer) return plotted(spillway::run_bench_transfer, transfer_opts, plot);
    if (*bench_e2e) return spillway::run_bench_e2e(e2e_opts);
    if (*peer) return spillway::run_transfer_peer(load(source), peer_opts);
    if (*soak) return spillway::run_soak(soak_opts);
    return 0;
  } catch (const CLI::ValidationError& e) {
    std::cerr << "spillway: " << e.what() << "\n";
    return exit_usage;
  } catch (const spillway::config_error& e) {
    std::cerr << e.what() << "\n";
    return exit_usage;
  } catch (const spillway::startup_error& e) {
    std::cerr << "spillway: cannot start the node: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "spillway: " << e.what() << "\n";
    return 1;
  }
}
