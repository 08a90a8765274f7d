// `spillway bench read` (BENCHMARKS.md "Read") and the read half of `spillway demo`:
// a dataset written through the put path, then batches of ~430 MB of keys drawn at
// random across every bucket, N of them at once, read cold (O_DIRECT) by the `window`
// design (views into the arena), by `into` (get_batch_into: the same reads landing in
// the caller's registered memory, in place), by the RFC's `group` baseline, and by fio
// over the same files, the runs interleaved. Every value is checked by the batch (length, crc32c against what was
// written) and the bench fails loudly if one is not ok.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <random>
#include <thread>

#include "runtime/io/arena_memory.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "tools/generated_value.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/io/progress.hpp"
#include "runtime/memory_regions.hpp"
#include "runtime/node.hpp"
#include "tools/bench_util.hpp"
#include "tools/read_limit.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t value_seed = 11;

node_config bench_node(const bench_read_options& o, const std::filesystem::path& dir) {
  auto config = load_config_text("", "bench");
  config.storage.data_dir = dir.string();
  config.storage.max_total_size = 1ull << 40;
  config.node.listen = "";
  config.node.log_level = "warn";
  config.read.arena_size = o.arena_bytes;
  return config;
}

std::vector<std::string> write_dataset(node& store, std::uint64_t object_size,
                                       std::uint64_t dataset_bytes) {
  const auto count = std::max<std::uint64_t>(1, dataset_bytes / object_size);
  std::vector<std::string> keys;
  std::vector<std::future<std::vector<key_status>>> acks;
  const auto per_put = std::max<std::uint64_t>(1, (64u << 20) / object_size);
  progress shown{"bench read: writing the dataset", "keys", count};
  for (std::uint64_t next = 0; next < count;) {
    std::vector<std::string> batch_keys, values;
    for (const auto end = std::min(count, next + per_put); next < end; ++next) {
      batch_keys.push_back(generated_key("obj-", next));
      values.push_back(generated_value(object_size, value_seed, batch_keys.back()));
    }
    keys.insert(keys.end(), batch_keys.begin(), batch_keys.end());
    shown.advance(batch_keys.size(), batch_keys.size() * object_size);
    acks.push_back(store.put(std::move(batch_keys), std::move(values)));
    if (acks.size() > 4) {  // bound the values held in memory
      for (const auto& s : acks.front().get())
        if (!s.ok()) throw std::runtime_error("bench read: a put failed: " + to_string(s));
      acks.erase(acks.begin());
    }
  }
  store.flush();
  shown.finish();
  for (auto& a : acks)
    for (const auto& s : a.get())
      if (!s.ok()) throw std::runtime_error("bench read: a put failed: " + to_string(s));
  return keys;
}

// What one round measured: GB/s of value bytes, and the readers' window over the round
// (mean reads in flight while a reader waited on the disk; the share of the round the
// readers spent waiting with reads in flight), which tell a starved window from a
// full one that the disk serves slowly.
struct round_figures {
  double gbps = 0;
  double in_flight = 0;
  double busy = 0;
};

std::pair<std::uint64_t, std::uint64_t> window_totals(node& store) {
  std::pair<std::uint64_t, std::uint64_t> busy_and_in_flight;
  for (const auto& r : store.stats().readers) {
    busy_and_in_flight.first += r.busy_ns;
    busy_and_in_flight.second += r.in_flight_ns;
  }
  return busy_and_in_flight;
}

std::uint64_t keys_per_batch(std::size_t keys, std::uint64_t batch_bytes, std::uint64_t object_size) {
  return std::min<std::uint64_t>(keys, std::max<std::uint64_t>(1, batch_bytes / object_size));
}

// Whether every reader that registers at all holds the arena's chunks and `pieces` more
// (caller memory, cut in pieces of at most 1 GiB as node::register_memory cuts it).
bool all_registered(node& store, std::uint64_t pieces = 0) {
  const auto chunks = (store.config().read.arena_size + store.config().read.arena_chunk - 1) /
                      store.config().read.arena_chunk;
  for (const auto& r : store.stats().readers)
    if (r.engine == "io_uring" && r.registration_errno == 0 &&
        r.registered_buffers != chunks + pieces)
      return false;
  return true;
}

// Polled once a millisecond: each ask is a message to every reader, and asking in a
// tight loop would crowd out a batch being timed.
void wait_registered(node& store, std::uint64_t pieces = 0) {
  while (!all_registered(store, pieces)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Where `into` rounds land: N batches of values side by side, each value on pages of
// its own, in huge pages (hugetlb where the pool has room, else THP) as the arena is,
// and registered with the node as a serving engine's KV pool would be: once, at start,
// so no round is timed while a reader still registers it.
class caller_buffers {
public:
  caller_buffers(node& store, std::uint64_t values, std::uint64_t object_size)
      : store_(store), stride_(bucket_format::align_up(object_size)),
        memory_(mapped(values * stride_), chunk, hugepage_kind(mapped(values * stride_))) {
    for (std::size_t c = 0; c < memory_.chunk_count(); ++c)
      while (memory_.populated(c) < memory_.chunk_size(c)) memory_.populate(c, chunk);
    bench::stopwatch clock;
    store_.register_memory(memory_.chunk_base(0), memory_.size());
    const auto pieces = (memory_.size() + memory_regions::piece_max - 1) / memory_regions::piece_max;
    wait_registered(store_, pieces);
    registered_s_ = clock.seconds();
  }
  ~caller_buffers() { store_.unregister_memory(memory_.chunk_base(0)); }
  caller_buffers(const caller_buffers&) = delete;
  caller_buffers& operator=(const caller_buffers&) = delete;

  // The buffer of value `i`: page-aligned, exactly as large as the value.
  std::span<std::byte> buffer(std::uint64_t i, std::uint64_t object_size) const {
    return {memory_.chunk_base(0) + i * stride_, object_size};
  }
  // The kind of pages asked for, and how much of the buffers the kernel made huge.
  std::string pages() const {
    return std::string{to_string(memory_.pages())} + " pages, " +
           std::to_string(memory_.huge_bytes() >> 20) + " of " +
           std::to_string(memory_.size() >> 20) + " MiB huge, registered in " +
           std::to_string(registered_s_).substr(0, 5) + " s";
  }

private:
  static constexpr std::uint64_t chunk = 1ull << 30;
  static std::uint64_t mapped(std::uint64_t bytes) { return (bytes + chunk - 1) / chunk * chunk; }
  static const char* hugepage_kind(std::uint64_t bytes) {
    return probe_hugepages().hugetlb_free_bytes() >= bytes ? "auto" : "thp";
  }

  node& store_;
  std::uint64_t stride_;
  arena_memory memory_;
  double registered_s_ = 0;
};

// get_batch_into of `keys` into the buffers from `first` on: the first key that came
// back wrong, or "" (each value was checked, length and crc32c, where it landed).
std::string read_into(node& store, const std::vector<std::string>& keys,
                      std::uint64_t object_size, const caller_buffers& into, std::uint64_t first) {
  std::vector<std::span<std::byte>> buffers;
  for (std::uint64_t k = 0; k < keys.size(); ++k) buffers.push_back(into.buffer(first + k, object_size));
  std::vector<std::size_t> sizes;
  const auto statuses = store.get_batch_into(keys, buffers, sizes);
  for (std::size_t k = 0; k < keys.size(); ++k)
    if (!statuses[k].ok() || sizes[k] != object_size) return keys[k] + ": " + to_string(statuses[k]);
  return {};
}

// One round: N batches at once, each of random distinct keys; `mode` "into" reads them
// into `into`, the others are views in that read.mode.
round_figures read_round(node& store, const std::vector<std::string>& keys,
                         std::uint64_t object_size, std::uint64_t batch_bytes, unsigned n,
                         const std::string& mode, std::mt19937_64& random,
                         const caller_buffers* into = nullptr) {
  const auto per_batch = keys_per_batch(keys.size(), batch_bytes, object_size);
  std::vector<std::vector<std::string>> batches(n);
  for (auto& b : batches) {
    std::vector<std::string> shuffled = keys;
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    b.assign(shuffled.begin(), shuffled.begin() + static_cast<std::ptrdiff_t>(per_batch));
  }
  std::vector<std::thread> clients;
  std::vector<std::string> failures(n);
  const auto before = window_totals(store);
  bench::stopwatch clock;
  for (unsigned c = 0; c < n; ++c)
    clients.emplace_back([&, c] {
      if (into) {
        failures[c] = read_into(store, batches[c], object_size, *into, c * per_batch);
        return;
      }
      const auto got = store.get_batch(batches[c], mode);
      for (std::size_t k = 0; k < got.values().size(); ++k)
        if (!got.values()[k].status.ok() || got.values()[k].bytes.size() != object_size)
          failures[c] = batches[c][k] + ": " + to_string(got.values()[k].status);
    });
  for (auto& t : clients) t.join();
  const double seconds = clock.seconds();
  for (const auto& f : failures)
    if (!f.empty()) throw std::runtime_error("bench read: a value came back wrong: " + f);
  const auto after = window_totals(store);
  const auto busy_ns = static_cast<double>(after.first - before.first);
  const auto readers = static_cast<double>(store.config().read.readers);
  return {static_cast<double>(per_batch * n * object_size) / seconds / 1e9,
          busy_ns > 0 ? static_cast<double>(after.second - before.second) / busy_ns : 0,
          busy_ns / 1e9 / seconds / readers};
}

// fio's random reads of the same size over the same bucket files, as many in flight as
// the readers keep; its own rate (bw_bytes). Fresh offsets every run (randrepeat=0), as
// the contenders draw fresh keys every round: this disk's host caches what was read, and
// fio's default, the same offsets run after run, read from that cache (128 KiB, QD 64,
// interleaved here: 1.4-2.0 GB/s repeated, 0.44-0.53 fresh).
double fio_round(const std::filesystem::path& dir, std::uint64_t object_size, std::uint64_t bytes,
                 unsigned iodepth, bool hugepages) {
  // Names relative to --directory: fio refuses a --filename list much over 4 KiB, so a
  // store of many buckets is sampled by its first ~150 files.
  std::string files;
  for (const auto& e : std::filesystem::directory_iterator{dir})
    if (e.path().extension() == ".bucket" && files.size() < 3500)
      files += (files.empty() ? "" : ":") + e.path().filename().string();
  const auto block = (object_size + 4095) / 4096 * 4096;
  const auto report = bench::capture(
    "fio --output-format=json --name=read --directory=" + dir.string() + " --filename=" + files +
    " --rw=randread --randrepeat=0 --bs=" +
    std::to_string(block) + " --iodepth=" + std::to_string(iodepth) +
    " --ioengine=io_uring --direct=1 --fixedbufs --io_size=" + std::to_string(bytes) +
    (hugepages ? " --mem=shmhuge" : ""));
  double best = 0;
  for (auto at = report.find("\"bw_bytes\""); at != std::string::npos;
       at = report.find("\"bw_bytes\"", at + 1))
    best = std::max(best, std::strtod(report.c_str() + report.find(':', at) + 1, nullptr));
  return best / 1e9;
}

struct cold_start {
  double first_batch_s = 0;
  double registered_s = 0;
  std::uint64_t reads_before_registered = 0;
  std::uint64_t failed_reads = 0;
  std::string pages;
};

// From the node's construction (recovery included) to the first batch served, and to
// every reader holding the whole arena registered; no read may fail meanwhile.
std::unique_ptr<node> start_cold(const node_config& config, const std::vector<std::string>& keys,
                                 cold_start& out) {
  bench::stopwatch clock;
  auto store = std::make_unique<node>(config);
  const auto few = std::min<std::size_t>(keys.size(), 8);
  std::vector<std::string> first{keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(few)};
  std::thread batch{[&] {
    const auto got = store->get_batch(first);
    out.first_batch_s = clock.seconds();
    for (const auto& v : got.values()) out.failed_reads += !v.status.ok();
  }};
  wait_registered(*store);
  out.registered_s = clock.seconds();
  batch.join();
  for (const auto& r : store->stats().readers) out.reads_before_registered += r.reads_plain;
  out.pages = store->read_stats().pages;
  return store;
}

// Reads every key back and compares every byte with what was written.
void verify_every_byte(node& store, const std::vector<std::string>& keys,
                       std::uint64_t object_size, std::uint64_t batch_bytes) {
  const auto per_batch = std::max<std::uint64_t>(1, batch_bytes / object_size);
  for (std::size_t at = 0; at < keys.size(); at += per_batch) {
    const std::vector<std::string> batch{keys.begin() + at,
                                         keys.begin() + std::min(keys.size(), at + per_batch)};
    const auto got = store.get_batch(batch);
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const auto& v = got.values()[k];
      const std::string_view bytes{reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()};
      if (!v.status.ok() || bytes != generated_value(object_size, value_seed, batch[k]))
        throw std::runtime_error("verify: " + batch[k] + " came back wrong");
    }
  }
}

}  // namespace

int run_bench_read(const bench_read_options& o) {
  const bool fio = o.fio && bench::on_path("fio");
  const bool hugepages = fio && probe_hugepages().hugetlb_free_bytes() >= (64u << 20);
  std::mt19937_64 random{o.seed};
  std::string json = "{\"runs\": " + std::to_string(o.runs) + ", \"fio_buffers\": " +
                     (!fio ? "null" : hugepages ? "\"hugepage\"" : "\"plain\"") +
                     ", \"results\": [";
  std::string ratios = "], \"ratios\": [";
  std::string cold_json;
  for (const auto size : o.object_sizes) {
    const auto dir = o.dir / ("spillway-bench-read-" + std::to_string(size));
    std::filesystem::remove_all(dir);
    const auto config = bench_node(o, dir);
    std::vector<std::string> keys;
    {
      node writer{config};
      keys = write_dataset(writer, size, o.dataset_bytes);
    }
    cold_start cold;
    auto store = start_cold(config, keys, cold);
    std::printf("\nobject size %llu, %zu keys, batches of %llu MB, arena %s pages\n",
                static_cast<unsigned long long>(size), keys.size(),
                static_cast<unsigned long long>(o.batch_bytes / 1000000), cold.pages.c_str());
    std::printf("%-8s", "GB/s");
    for (auto n : o.concurrency) std::printf("   N=%-14u", n);
    std::printf("\n");
    const unsigned iodepth = static_cast<unsigned>(config.read.readers * config.read.window);
    const auto columns = o.concurrency.size();
    std::vector<std::vector<double>> window(columns), group(columns), limit(columns),
      over_group(columns), over_fio(columns), in_flight(columns), busy(columns),
      footprint(columns), over_footprint(columns), into(columns), over_window(columns),
      copied(columns), into_in_flight(columns), into_busy(columns);
    std::optional<caller_buffers> buffers;  // unregistered before the node goes
    buffers.emplace(*store,
                    keys_per_batch(keys.size(), o.batch_bytes, size) *
                      *std::max_element(o.concurrency.begin(), o.concurrency.end()),
                    size);
    progress shown{"bench read " + std::to_string(size), "rounds", o.runs * columns};
    for (unsigned run = 0; run < o.runs; ++run)  // interleaved: the host's noise is shared
      for (std::size_t c = 0; c < columns; ++c) {
        const auto n = o.concurrency[c];
        std::vector<std::function<void()>> contenders{
          [&] {
            const auto w = read_round(*store, keys, size, o.batch_bytes, n, "window", random);
            window[c].push_back(w.gbps);
            in_flight[c].push_back(w.in_flight);
            busy[c].push_back(w.busy);
          },
          [&] {
            group[c].push_back(read_round(*store, keys, size, o.batch_bytes, n, "group", random).gbps);
          },
          [&] {
            const auto before = store->io().read_copied_bytes;
            const auto i = read_round(*store, keys, size, o.batch_bytes, n, "into", random, &*buffers);
            into[c].push_back(i.gbps);
            into_in_flight[c].push_back(i.in_flight);
            into_busy[c].push_back(i.busy);
            copied[c].push_back(static_cast<double>(store->io().read_copied_bytes - before));
          },
          [&] {
            footprint[c].push_back(footprint_round(dir, size, o.batch_bytes * n, iodepth, random));
          },
        };
        if (fio)
          contenders.push_back(
            [&] { limit[c].push_back(fio_round(dir, size, o.batch_bytes * n, iodepth, hugepages)); });
        // Each contender goes first in turn, so none always reads right after the same one.
        for (std::size_t k = 0; k < contenders.size(); ++k)
          contenders[(run + k) % contenders.size()]();
        over_group[c].push_back(window[c].back() / group[c].back());
        over_window[c].push_back(into[c].back() / window[c].back());
        over_footprint[c].push_back(window[c].back() / footprint[c].back());
        if (fio) over_fio[c].push_back(window[c].back() / limit[c].back());
        shown.advance(1);
      }
    shown.finish();
    // Rates print their median; ratios their median and its 95 % interval (low-high).
    auto row = [&](const char* name, const std::vector<std::vector<double>>& xs) {
      const bool ratio = std::string{name}.find('/') != std::string::npos;
      std::printf("%-8s", name);
      for (std::size_t c = 0; c < xs.size(); ++c) {
        const auto [low, high] = bench::median_interval(xs[c]);
        char cell[40];
        std::snprintf(cell, sizeof cell, ratio ? "%.2f (%.2f-%.2f)" : "%.2f",
                      bench::median(xs[c]), low, high);
        std::printf("   %-16s", cell);
        if (ratio) continue;
        if (json.back() == '}') json += ", ";
        json += "{\"object_size\": " + std::to_string(size) + ", \"contender\": \"" + name +
                  "\", \"n\": " + std::to_string(o.concurrency[c]) +
                  ", \"gbps\": " + std::to_string(bench::median(xs[c])) + "}";
      }
      std::printf("\n");
    };
    row("window", window);
    row("into", into);
    row("group", group);
    if (fio) row("fio", limit);
    row("bigbuf", footprint);
    row("i/window", over_window);
    row("w/group", over_group);
    if (fio) row("w/fio", over_fio);
    row("w/bigbuf", over_footprint);
    // `into` counts a value's last page as a read of its own (a companion, outside the
    // window): up to twice the window's reads.
    auto occupancy = [&](const char* name, const std::vector<std::vector<double>>& reads,
                         const std::vector<std::vector<double>>& busy_share) {
      std::printf("%s: reads in flight per reader while busy", name);
      for (const auto& x : reads) std::printf(" %.1f", bench::median(x));
      std::printf(" (window %llu); readers busy", static_cast<unsigned long long>(config.read.window));
      for (const auto& x : busy_share) std::printf(" %.0f%%", 100 * bench::median(x));
      std::printf(" of the time\n");
    };
    occupancy("window", in_flight, busy);
    occupancy("into", into_in_flight, into_busy);
    std::printf("into: caller buffers in %s; bytes copied per round",
                buffers->pages().c_str());
    for (const auto& x : copied) std::printf(" %.0f", bench::median(x));
    std::printf("\n");
    for (std::size_t c = 0; c < o.concurrency.size(); ++c) {
      if (ratios.back() == '}') ratios += ", ";
      // Each ratio's median, then its 95 % interval as "NAME_ci95": [low, high].
      auto ratio = [&](const char* name, const std::vector<double>& xs) {
        const auto [low, high] = bench::median_interval(xs);
        return ", \"" + std::string{name} + "\": " + std::to_string(bench::median(xs)) + ", \"" +
               name + "_ci95\": [" + std::to_string(low) + ", " + std::to_string(high) + "]";
      };
      ratios += "{\"object_size\": " + std::to_string(size) + ", \"n\": " +
                std::to_string(o.concurrency[c]) + ratio("window_over_group", over_group[c]) +
                ratio("window_over_bigbuf", over_footprint[c]) +
                ratio("into_over_window", over_window[c]) +
                ", \"bytes_copied\": " + std::to_string(static_cast<std::uint64_t>(bench::median(copied[c]))) +
                (fio ? ratio("window_over_fio", over_fio[c]) : ", \"window_over_fio\": null") +
                "}";
    }
    std::printf("cold start: first batch %.3f s, every reader registered %.3f s, %llu reads "
                "before that, %llu failed\n", cold.first_batch_s, cold.registered_s,
                static_cast<unsigned long long>(cold.reads_before_registered),
                static_cast<unsigned long long>(cold.failed_reads));
    cold_json = "{\"arena_bytes\": " + std::to_string(config.read.arena_size) +
                ", \"arena_pages\": \"" + cold.pages + "\", \"first_batch_s\": " +
                std::to_string(cold.first_batch_s) + ", \"registered_s\": " +
                std::to_string(cold.registered_s) + ", \"reads_before_registered\": " +
                std::to_string(cold.reads_before_registered) + ", \"failed_reads\": " +
                std::to_string(cold.failed_reads) + "}";
    if (o.verify) {
      verify_every_byte(*store, keys, size, o.batch_bytes);
      std::printf("verified: every byte of %zu values\n", keys.size());
    }
    if (!o.metrics.empty()) std::ofstream{o.metrics} << store->metrics();
    buffers.reset();
    store.reset();
    if (!o.keep_data) std::filesystem::remove_all(dir);
    if (cold.failed_reads != 0) throw std::runtime_error("bench read: reads failed at cold start");
  }
  if (!o.json.empty())
    std::ofstream{o.json} << json << ratios << "], \"cold_start\": " << cold_json << "}\n";
  return 0;
}

}  // namespace spillway
