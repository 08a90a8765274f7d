// `spillway bench e2e` (BENCHMARKS.md "End to end"): `spillway serve` children hold the
// dataset on SSD (data dirs under --dir, written through a client), and a client in this
// process registers a batch's worth of huge pages and get_into's batches of random keys
// into them, each node writing its values over tcp on 127.0.0.1. Contenders, one round
// each per run, their order rotated from run to run:
//   e2e     the client against one node;
//   e2e_3   (--nodes 3) the same batch against three nodes holding the same keys, spread
//           by rendezvous hashing;
//   read    the disk's limit: a bare io_uring loop reading what the node reads for a
//           value (its record's aligned extent) at random offsets of the one node's
//           bucket files, O_DIRECT at the node's greatest depth (readers x window:
//           read.window_bytes keeps fewer large reads in flight), into huge pages as
//           large as the batch (tools/read_limit.hpp, bench read's footprint limit).
//           The same files, sizes and footprint, not the same keys: the node's own
//           reads cannot be timed apart from its transfers;
//   tcp     the network's limit: one plain TCP stream of the batch's bytes over
//           loopback, from huge pages into the client's registered buffer.
// The figure is e2e / min(read, tcp), the median of the per-run ratios. Every value of
// every round is checked after it: status, size, and crc32c of what landed against
// what was written. The serve children are killed however the bench ends.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "runtime/client.hpp"
#include "runtime/io/arena_memory.hpp"
#include "runtime/io/progress.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "runtime/storage/crc32c.hpp"
#include "tools/bench_util.hpp"
#include "tools/commands.hpp"
#include "tools/generated_value.hpp"
#include "tools/read_limit.hpp"
#include "tools/serve_child.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t value_seed = 12;
constexpr std::uint64_t chunk = 1ull << 30;  // huge-page buffers are mapped in these

std::uint64_t round_up(std::uint64_t bytes, std::uint64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

// Huge pages (THP), faulted in before anything is timed.
std::unique_ptr<arena_memory> huge_buffer(std::uint64_t bytes) {
  auto memory = std::make_unique<arena_memory>(round_up(bytes, chunk), chunk, "thp");
  for (std::size_t c = 0; c < memory->chunk_count(); ++c)
    while (memory->populated(c) < memory->chunk_size(c)) memory->populate(c, chunk);
  return memory;
}

std::string node_toml(const std::filesystem::path& data_dir, std::uint64_t arena_bytes) {
  const auto arena = std::to_string(arena_bytes);
  return "[node]\nlisten = \"127.0.0.1:0\"\n[storage]\ndata_dir = \"" + data_dir.string() +
         "\"\nmax_total_size = " + std::to_string(1ull << 40) + "\n[read]\narena_size = " +
         arena + "\narena_chunk = " + std::to_string(std::min(arena_bytes, chunk)) +
         "\n[transfer]\nlisten = \"127.0.0.1:0\"\n";
}

// Some `spillway serve` children and a client of theirs, with a batch's buffer registered.
struct cluster_under_test {
  std::vector<std::unique_ptr<bench::serve_child>> nodes;
  std::unique_ptr<client> user;

  cluster_under_test(const std::filesystem::path& dir, unsigned count, std::uint64_t arena) {
    cluster_section cluster;
    for (unsigned n = 0; n < count; ++n) {
      const auto node_dir = dir / ("node-" + std::to_string(n));
      nodes.push_back(std::make_unique<bench::serve_child>(node_dir, node_toml(node_dir / "data", arena)));
      cluster.nodes.push_back(nodes.back()->address());
    }
    cluster.request_timeout_ms = 60000;
    user = std::make_unique<client>(cluster);
    if (user->await_connected(std::chrono::seconds(30)) != count)
      throw std::runtime_error("bench e2e: the client did not reach every node");
  }
};

// Writes `count` generated values through `c`; their crc32c by key.
void write_dataset(client& c, const std::vector<std::string>& keys, std::uint64_t object_size,
                   std::unordered_map<std::string, std::uint32_t>& crcs, const std::string& what) {
  const auto per_put = std::max<std::uint64_t>(1, (32u << 20) / object_size);
  progress shown{"bench e2e: writing the dataset to " + what, "keys", keys.size()};
  for (std::size_t next = 0; next < keys.size();) {
    std::vector<std::string> batch_keys, values;
    for (const auto end = std::min(keys.size(), next + per_put); next < end; ++next) {
      batch_keys.push_back(keys[next]);
      values.push_back(generated_value(object_size, value_seed, keys[next]));
      crcs[keys[next]] = crc32c(values.back().data(), values.back().size());
    }
    for (const auto& s : c.put(batch_keys, values))
      if (!s.ok()) throw std::runtime_error("bench e2e: a put failed: " + to_string(s));
    shown.advance(batch_keys.size(), batch_keys.size() * object_size);
  }
  shown.finish();
}

// One batch into `buffers`, timed; GB/s. Throws naming the first key that came back wrong.
double e2e_round(client& c, const std::vector<std::string>& batch,
                 const std::vector<std::span<std::byte>>& buffers, std::uint64_t object_size,
                 const std::unordered_map<std::string, std::uint32_t>& crcs) {
  std::vector<std::size_t> sizes;
  bench::stopwatch clock;
  const auto statuses = c.get_into(batch, buffers, sizes);
  const double seconds = clock.seconds();
  for (std::size_t k = 0; k < batch.size(); ++k)
    if (!statuses[k].ok() || sizes[k] != object_size ||
        crc32c(buffers[k].data(), object_size) != crcs.at(batch[k]))
      throw std::runtime_error("bench e2e: " + batch[k] + " came back wrong: " +
                               to_string(statuses[k]));
  return static_cast<double>(batch.size() * object_size) / seconds / 1e9;
}

// One plain TCP stream of `bytes` from `from` into `to` over loopback; GB/s.
double tcp_round(const std::byte* from, std::byte* to, std::uint64_t bytes) {
  const auto listener = listen_tcp("127.0.0.1", 0);
  const auto port = local_port(listener.get());
  bool sent = false;
  bench::stopwatch clock;
  std::thread sender{[&] {
    int error = 0;
    const auto fd = connect_tcp("127.0.0.1", port, error);
    sent = fd && send_all(fd.get(), from, bytes);
  }};
  const auto in = accept_tcp(listener.get());
  const bool received = in && recv_all(in.get(), to, bytes);
  const double seconds = clock.seconds();
  sender.join();
  if (!sent || !received || std::memcmp(from, to, bytes) != 0)
    throw std::runtime_error("bench e2e: the plain TCP stream failed or moved wrong bytes");
  return static_cast<double>(bytes) / seconds / 1e9;
}

struct size_figures {
  std::uint64_t object_size = 0;
  std::vector<double> e2e, e2e_3, read, tcp, over_limit, three_over_one;
};

std::string interval(const std::vector<double>& xs) {
  const auto [low, high] = bench::median_interval(xs);
  char text[64];
  std::snprintf(text, sizeof text, "[%.2f, %.2f]", low, high);
  return text;
}

void print_row(const char* name, const std::vector<double>& xs) {
  if (xs.empty()) return;
  std::printf("%-26s %8.2f   %s\n", name, bench::median(xs), interval(xs).c_str());
}

void print_table(const size_figures& f) {
  std::printf("%-26s %8s   %s\n", "contender", "median", "95 % interval");
  print_row("e2e, 1 node (GB/s)", f.e2e);
  print_row("e2e, 3 nodes (GB/s)", f.e2e_3);
  print_row("read limit (GB/s)", f.read);
  print_row("tcp limit (GB/s)", f.tcp);
  print_row("e2e / min(read, tcp)", f.over_limit);
  print_row("3 nodes / 1 node", f.three_over_one);
}

std::string json_of(const std::vector<size_figures>& all, unsigned runs, unsigned nodes) {
  std::string results, ratios;
  auto add = [&](std::uint64_t size, const char* name, const std::vector<double>& xs) {
    if (xs.empty()) return;
    results += std::string{results.empty() ? "" : ", "} + "{\"object_size\": " +
               std::to_string(size) + ", \"contender\": \"" + name +
               "\", \"gbps\": " + std::to_string(bench::median(xs)) + "}";
  };
  for (const auto& f : all) {
    add(f.object_size, "e2e", f.e2e);
    add(f.object_size, "e2e_3", f.e2e_3);
    add(f.object_size, "read", f.read);
    add(f.object_size, "tcp", f.tcp);
    ratios += std::string{ratios.empty() ? "" : ", "} + "{\"object_size\": " +
              std::to_string(f.object_size) +
              ", \"e2e_over_limit\": " + std::to_string(bench::median(f.over_limit)) +
              (f.three_over_one.empty()
                 ? std::string{}
                 : ", \"nodes3_over_1\": " + std::to_string(bench::median(f.three_over_one))) +
              "}";
  }
  return "{\"runs\": " + std::to_string(runs) + ", \"nodes\": " + std::to_string(nodes) +
         ", \"results\": [" + results + "], \"ratios\": [" + ratios + "]}\n";
}

// The read limit reads sealed bucket files: the open one seals storage.seal_after_ms
// after the last put.
void await_sealed(const std::filesystem::path& data_dir) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto open_bucket = [&] {
    for (const auto& e : std::filesystem::directory_iterator{data_dir})
      if (e.path().extension() == ".tmp") return true;
    return false;
  };
  while (open_bucket()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("bench e2e: the node's open bucket did not seal within 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The node's greatest read depth, as its config resolves it on this machine.
unsigned node_depth() {
  const auto defaults = load_config_text("", "bench e2e");
  return static_cast<unsigned>(defaults.read.readers * defaults.read.window);
}

size_figures bench_size(const bench_e2e_options& o, std::uint64_t size,
                        const std::filesystem::path& dir, std::mt19937_64& random) {
  size_figures f{size, {}, {}, {}, {}, {}, {}};
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < std::max<std::uint64_t>(1, o.dataset_bytes / size); ++i)
    keys.push_back(generated_key("obj-", i));
  std::unordered_map<std::string, std::uint32_t> crcs;
  cluster_under_test one{dir / "one", 1, o.arena_bytes};
  write_dataset(*one.user, keys, size, crcs, "one node");
  std::optional<cluster_under_test> three;
  if (o.nodes == 3) {
    three.emplace(dir / "three", 3, o.arena_bytes);
    write_dataset(*three->user, keys, size, crcs, "three nodes");
  }
  const auto per_batch = std::min<std::uint64_t>(keys.size(), std::max<std::uint64_t>(1, o.batch_bytes / size));
  const auto stride = bucket_format::align_up(size);
  const auto into = huge_buffer(per_batch * stride);
  const auto source = huge_buffer(per_batch * size);
  std::memset(source->chunk_base(0), 0x5a, per_batch * size);
  std::vector<std::span<std::byte>> buffers;
  for (std::uint64_t k = 0; k < per_batch; ++k) buffers.push_back({into->chunk_base(0) + k * stride, size});
  for (auto* c : {&one, three ? &*three : nullptr})
    if (c) c->user->register_memory(into->chunk_base(0), into->size());
  std::printf("\nobject size %llu, %zu keys, batches of %llu values (%llu MB), client buffers %s\n",
              static_cast<unsigned long long>(size), keys.size(),
              static_cast<unsigned long long>(per_batch),
              static_cast<unsigned long long>(per_batch * size / 1000000), to_string(into->pages()));
  const auto data_dir = dir / "one" / "node-0" / "data";
  const auto depth = node_depth();
  await_sealed(data_dir);
  // Untimed: each node connects to the client's transfer host on its first get_into.
  for (auto* c : {&one, three ? &*three : nullptr})
    if (c) e2e_round(*c->user, {keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(per_batch)}, buffers, size, crcs);
  progress shown{"bench e2e " + std::to_string(size), "runs", o.runs};
  for (unsigned run = 0; run < o.runs; ++run) {
    std::vector<std::string> batch = keys;
    std::shuffle(batch.begin(), batch.end(), random);
    batch.resize(per_batch);
    const auto bytes = per_batch * size;
    std::vector<std::function<void()>> contenders{
      [&] { f.e2e.push_back(e2e_round(*one.user, batch, buffers, size, crcs)); },
      [&] { f.read.push_back(footprint_round(data_dir, size, bytes, depth, random)); },
      [&] { f.tcp.push_back(tcp_round(source->chunk_base(0), into->chunk_base(0), bytes)); },
    };
    if (three)
      contenders.push_back([&] { f.e2e_3.push_back(e2e_round(*three->user, batch, buffers, size, crcs)); });
    std::rotate(contenders.begin(), contenders.begin() + run % contenders.size(), contenders.end());
    for (auto& c : contenders) c();
    f.over_limit.push_back(f.e2e.back() / std::min(f.read.back(), f.tcp.back()));
    if (three) f.three_over_one.push_back(f.e2e_3.back() / f.e2e.back());
    shown.advance(1, bytes * contenders.size());
  }
  shown.finish();
  print_table(f);
  return f;
}

// The bench's own dir under --dir, gone at the end however the bench ends (after the
// children, which are destroyed first).
struct scratch_dir {
  std::filesystem::path path;
  explicit scratch_dir(std::filesystem::path p) : path(std::move(p)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

int run_bench_e2e(const bench_e2e_options& o) {
  std::mt19937_64 random{o.seed};
  std::vector<size_figures> all;
  for (const auto size : o.object_sizes) {
    const scratch_dir dir{o.dir / ("spillway-bench-e2e-" + std::to_string(size))};
    all.push_back(bench_size(o, size, dir.path, random));
  }
  if (!o.json.empty()) std::ofstream{o.json} << json_of(all, o.runs, o.nodes);
  return 0;
}

}  // namespace spillway
