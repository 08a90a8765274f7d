// `spillway bench write`: puts of generated values into the real disk through the
// normal put path (writer, staging, io_uring, O_DIRECT, commit, seal, fsync, publish),
// `staged` (put(): each value copied into staging) and `in place` (put_from() from
// page-aligned caller memory on huge pages where the machine has them: whole pages
// written from there), against fio writing the same number of bytes sequentially with
// O_DIRECT, the runs interleaved A B C A B C; medians and the median of the pairwise
// ratios. Then the latency of a put of one value, from put() to its answer, with one
// put in flight and with four.
#include <array>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>

#include "tools/generated_value.hpp"
#include "runtime/io/arena_memory.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/io/progress.hpp"
#include "runtime/node.hpp"
#include "tools/bench_util.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

// Values generated once per object size and copied before each run, outside the
// timed part: put() consumes what it is given.
struct dataset {
  std::vector<std::string> keys;
  std::vector<std::string> values;
};

dataset make_dataset(std::uint64_t object_size, std::uint64_t total) {
  dataset d;
  const auto count = std::max<std::uint64_t>(1, total / object_size);
  for (std::uint64_t i = 0; i < count; ++i) {
    d.keys.push_back(generated_key("bench-", i));
    d.values.push_back(generated_value(object_size, 1, d.keys.back()));
  }
  return d;
}

// The same values in caller memory, each starting on a page, as a serving engine's
// pinned KV pool holds them; faulted in before any run.
struct caller_dataset {
  arena_memory memory;
  std::vector<std::span<const std::byte>> values;

  caller_dataset(const dataset& data, std::uint64_t object_size)
      : memory(data.keys.size() * ((object_size + 4095) / 4096 * 4096), 1ull << 30, "auto") {
    for (std::size_t c = 0; c < memory.chunk_count(); ++c)
      while (memory.populated(c) < memory.chunk_size(c)) memory.populate(c, 1ull << 30);
    std::byte* at = memory.chunk_base(0);
    for (const auto& v : data.values) {
      std::memcpy(at, v.data(), v.size());
      values.push_back({at, v.size()});
      at += (v.size() + 4095) / 4096 * 4096;
    }
  }
};

// A node on the defaults in a fresh data dir.
node_config bench_config(const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  auto config = load_config_text("", "bench");
  config.storage.data_dir = dir.string();
  config.node.listen = "";
  config.node.log_level = "warn";
  config.storage.max_total_size = 1ull << 40;
  return config;
}

struct run_result {
  double gbps = 0;            // value bytes over the run's time
  std::uint64_t copied = 0;   // value bytes the writer copied into staging
};

// One run of the put path into a fresh data dir: put(store, batch) puts one of the
// batches of about 64 MiB the keys are cut into, all of them at once.
template <class Put>
run_result timed_run(const dataset& data, const std::filesystem::path& dir, Put put) {
  const std::size_t per_put = std::max<std::size_t>(1, (64u << 20) / data.values[0].size());
  const std::size_t batches = (data.keys.size() + per_put - 1) / per_put;
  double bytes = 0;
  for (const auto& v : data.values) bytes += static_cast<double>(v.size());
  node store{bench_config(dir)};
  bench::stopwatch clock;
  std::vector<std::future<std::vector<key_status>>> results;
  for (std::size_t b = 0; b < batches; ++b)
    results.push_back(put(store, b * per_put, std::min(data.keys.size(), (b + 1) * per_put)));
  store.flush();
  for (auto& r : results)
    for (const auto& s : r.get())
      if (!s.ok()) throw std::runtime_error("bench write: a put failed: " + to_string(s));
  const double seconds = clock.seconds();
  const auto copied = store.io().written_copied_bytes;
  store.stop();
  std::filesystem::remove_all(dir);
  return {bytes / seconds / 1e9, copied};
}

// put(): the values move into the writer's mailbox, so each run's are copied untimed.
run_result staged_run(const dataset& data, const std::filesystem::path& dir) {
  auto values = data.values;
  return timed_run(data, dir, [&](node& store, std::size_t first, std::size_t end) {
    return store.put({data.keys.begin() + first, data.keys.begin() + end},
                     {std::make_move_iterator(values.begin() + first),
                      std::make_move_iterator(values.begin() + end)});
  });
}

run_result in_place_run(const dataset& data, const caller_dataset& caller,
                        const std::filesystem::path& dir) {
  return timed_run(data, dir, [&](node& store, std::size_t first, std::size_t end) {
    return store.put_from({data.keys.begin() + first, data.keys.begin() + end},
                          {caller.values.begin() + first, caller.values.begin() + end});
  });
}

constexpr std::size_t latency_puts = 64;
constexpr std::array<unsigned, 2> latency_in_flight{1, 4};

// Each put's time, in ms, from put() to its answer, `in_flight` puts of one value each
// kept going; the defaults' buckets, so a seal (every 1 s) may fall among them, as it
// does for a caller.
std::vector<double> put_latencies(const dataset& data, const std::filesystem::path& dir,
                                  unsigned in_flight) {
  const auto count = std::min(latency_puts, data.keys.size());
  std::vector<std::string> values(data.values.begin(), data.values.begin() + count);
  std::vector<double> ms;
  {
    node store{bench_config(dir)};
    std::deque<std::pair<bench::stopwatch, std::future<std::vector<key_status>>>> pending;
    auto settle_oldest = [&] {
      for (const auto& s : pending.front().second.get())
        if (!s.ok()) throw std::runtime_error("bench write: a put failed: " + to_string(s));
      ms.push_back(pending.front().first.seconds() * 1e3);
      pending.pop_front();
    };
    for (std::size_t i = 0; i < count; ++i) {
      if (pending.size() == in_flight) settle_oldest();
      pending.emplace_back(bench::stopwatch{}, store.put({data.keys[i]}, {std::move(values[i])}));
    }
    while (!pending.empty()) settle_oldest();
  }
  std::filesystem::remove_all(dir);
  return ms;
}

// fio writing the same bytes sequentially: 4 MiB blocks, 4 in flight (the writer's
// staging slots), O_DIRECT, io_uring, an fsync at the end. The rate is fio's own
// (bw_bytes), over its I/O alone: its start-up, about 0.3 s here, would otherwise
// count against it. Ours includes every seal's fdatasync, so the ratio errs against
// us. Its buffers come from the hugetlb pool when it has room (--mem=shmhuge): on this
// kind of disk a write from scattered 4 KiB pages is split, and fio would measure its
// buffer rather than the drive.
double fio_run(std::uint64_t bytes, const std::filesystem::path& dir, bool hugepages) {
  std::filesystem::create_directories(dir);
  const auto file = dir / "fio.dat";
  const auto report = bench::capture(
    "fio --output-format=json --name=write --filename=" + file.string() +
    " --rw=write --bs=4M --iodepth=4 --ioengine=io_uring --direct=1 --fallocate=none"
    " --end_fsync=1 --size=" + std::to_string(bytes) + (hugepages ? " --mem=shmhuge" : ""));
  std::filesystem::remove_all(dir);
  double best = 0;  // the write job's is the one rate that is not zero
  for (auto at = report.find("\"bw_bytes\""); at != std::string::npos;
       at = report.find("\"bw_bytes\"", at + 1))
    best = std::max(best, std::strtod(report.c_str() + report.find(':', at) + 1, nullptr));
  return best / 1e9;
}

bool hugepages_for_fio() {
  constexpr std::uint64_t fio_buffer_bytes = 4 * (4u << 20);  // iodepth x bs
  return probe_hugepages().hugetlb_free_bytes() >= fio_buffer_bytes;
}

}  // namespace

int run_bench_write(const bench_write_options& options) {
  const bool fio = options.fio && bench::on_path("fio");
  if (options.fio && !fio) std::fprintf(stderr, "fio is not installed: no limit column\n");
  const bool hugepages = fio && hugepages_for_fio();
  if (fio) std::printf("fio buffers: %s\n", hugepages ? "hugepage" : "plain (no hugetlb pool)");
  std::printf("%12s %12s %12s %12s %12s %12s %19s %19s\n", "object_size", "staged",
              "in place", "fio", "staged/fio", "in_place/fio", "put ms p50/p99 N=1", "N=4");
  std::string json = "{\"runs\": " + std::to_string(options.runs) + ", \"fio_buffers\": " +
                     (!fio ? "null" : hugepages ? "\"hugepage\"" : "\"plain\"") +
                     ", \"results\": [";
  for (const auto size : options.object_sizes) {
    const auto data = make_dataset(size, options.total);
    const caller_dataset caller{data, size};
    const auto bytes = data.keys.size() * size;
    std::vector<double> staged, in_place, limit, staged_ratios, in_place_ratios;
    std::uint64_t staged_copied = 0, in_place_copied = 0;
    progress shown{"bench write " + std::to_string(size), "runs", options.runs};
    for (unsigned run = 0; run < options.runs; ++run) {  // A B C A B C: the noise is shared
      const auto a = staged_run(data, options.dir / "spillway");
      const auto b = in_place_run(data, caller, options.dir / "spillway");
      staged.push_back(a.gbps);
      in_place.push_back(b.gbps);
      staged_copied = a.copied;
      in_place_copied = b.copied;
      if (fio) {
        limit.push_back(fio_run(bytes, options.dir / "fio", hugepages));
        staged_ratios.push_back(a.gbps / limit.back());
        in_place_ratios.push_back(b.gbps / limit.back());
      }
      shown.advance(1, 2 * bytes);
    }
    shown.finish();
    std::printf("%12llu %7.2f GB/s %7.2f GB/s %7.2f GB/s %12.2f %12.2f",
                static_cast<unsigned long long>(size), bench::median(staged),
                bench::median(in_place), bench::median(limit), bench::median(staged_ratios),
                bench::median(in_place_ratios));
    if (json.back() == '}') json += ", ";
    json += "{\"object_size\": " + std::to_string(size) +
            ", \"caller_pages\": \"" + to_string(caller.memory.pages()) + "\"" +
            ", \"spillway_gbps\": " + std::to_string(bench::median(staged)) +
            ", \"in_place_gbps\": " + std::to_string(bench::median(in_place)) +
            ", \"fio_gbps\": " + std::to_string(bench::median(limit)) +
            ", \"spillway_over_fio\": " + std::to_string(bench::median(staged_ratios)) +
            ", \"in_place_over_fio\": " + std::to_string(bench::median(in_place_ratios)) +
            ", \"bytes_copied\": {\"staged\": " + std::to_string(staged_copied) +
            ", \"in_place\": " + std::to_string(in_place_copied) + "}" +
            ", \"put_latency_ms\": {";
    for (const auto n : latency_in_flight) {
      const auto ms = put_latencies(data, options.dir / "spillway", n);
      const auto p50 = bench::percentile(ms, 0.5), p99 = bench::percentile(ms, 0.99);
      std::printf(" %9.1f/%-9.1f", p50, p99);
      if (json.back() != '{') json += ", ";
      json += "\"" + std::to_string(n) + "\": {\"p50\": " + std::to_string(p50) +
              ", \"p99\": " + std::to_string(p99) + "}";
    }
    std::printf("   (in place: caller memory on %s pages)\n", to_string(caller.memory.pages()));
    json += "}}";
  }
  if (!options.json.empty()) std::ofstream{options.json} << json << "]}\n";
  return 0;
}

}  // namespace spillway
