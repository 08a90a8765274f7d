// `spillway put`, `get`, `gen` and `inspect`: the bucket store from the shell, on the
// data dir of a config file or of --data-dir, while no node runs there (the data dir
// lock says so if one does). put/get/gen start an embedded node: the normal put path,
// the normal checks.
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "runtime/io/progress.hpp"
#include "runtime/storage/data_dir_lock.hpp"
#include "runtime/storage/printable_key.hpp"
#include "tools/generated_value.hpp"
#include "runtime/node.hpp"
#include "runtime/storage/store_inspection.hpp"
#include "tools/bench_util.hpp"
#include "tools/commands.hpp"

namespace spillway {

std::string read_input(const std::string& file) {
  if (file == "-") return {std::istreambuf_iterator<char>{std::cin}, {}};
  std::ifstream in{file, std::ios::binary};
  if (!in) throw std::runtime_error(file + ": cannot read");
  return {std::istreambuf_iterator<char>{in}, {}};
}

int run_put(const node_config& config, const std::string& key, const std::string& file) {
  node store{config};
  auto result = store.put({key}, {read_input(file)});
  store.flush();
  const auto status = result.get().at(0);
  if (status.ok()) return 0;
  std::cerr << "spillway put: " << printable_key(key) << ": " << to_string(status) << "\n";
  return 1;
}

int run_get(const node_config& config, const std::string& key) {
  node store{config};
  const auto result = store.read_values({key}).at(0);
  if (!result.status.ok()) {
    std::cerr << "spillway get: " << printable_key(key) << ": " << to_string(result.status) << "\n";
    return 1;
  }
  std::cout.write(result.value.data(), static_cast<std::streamsize>(result.value.size()));
  return std::cout.good() ? 0 : 1;
}

int run_exists(const node_config& config, const std::vector<std::string>& keys) {
  node store{config};
  return print_exists(keys, store.exists(keys));
}

int run_remove(const node_config& config, const std::vector<std::string>& keys) {
  node store{config};
  std::cout << "removed " << store.remove(keys) << "\n";
  return 0;
}

namespace {

// The puts of `spillway gen`, a few in flight so that the writer stays busy while the
// next batch is generated, and answered oldest first. Each batch's values are
// generated straight into page-aligned memory of its own and put with put_from, so
// the writer writes them from there without a copy (as a serving engine's KV pool
// would be); the memory is used again once its put is answered.
class gen_pipeline {
public:
  gen_pipeline(node& store, const gen_options& gen, std::uint64_t per_put)
      : store_(store),
        gen_(gen),
        memory_bytes_(std::max<std::size_t>(per_put * value_stride(), 4096)),
        shown_("gen", "keys", gen.count) {}

  // Generates and puts keys [first, end), at most per_put of them.
  void put(std::uint64_t first, std::uint64_t end) {
    batch b;
    b.memory = take_memory();
    std::vector<std::span<const std::byte>> values;
    std::byte* at = b.memory.get();
    for (auto i = first; i < end; ++i) {
      b.keys.push_back(generated_key(gen_.prefix, i));
      fill_generated_value({at, gen_.size}, gen_.seed, b.keys.back());
      values.push_back({at, gen_.size});
      at += value_stride();
    }
    b.result = store_.put_from(b.keys, values);
    in_flight_.push_back(std::move(b));
    if (in_flight_.size() >= gen_.in_flight) settle_oldest();
  }

  // Flushes, then waits for every put; returns how many keys failed.
  std::uint64_t finish() {
    store_.flush();
    while (!in_flight_.empty()) settle_oldest();
    shown_.finish();
    return failed_;
  }

  std::uint64_t acked() const { return acked_; }
  double seconds() const { return clock_.seconds(); }

private:
  struct free_memory {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using page_memory = std::unique_ptr<std::byte, free_memory>;

  struct batch {
    std::vector<std::string> keys;
    page_memory memory;
    std::future<std::vector<key_status>> result;
  };

  std::size_t value_stride() const { return (gen_.size + 4095) / 4096 * 4096; }

  // Room for a batch's values, each on pages of its own: what an answered put gave
  // back, else new.
  page_memory take_memory() {
    if (!spare_.empty()) {
      auto m = std::move(spare_.back());
      spare_.pop_back();
      return m;
    }
    // On transparent huge pages where the kernel has them: the drive splits an O_DIRECT
    // write that gathers many scattered 4 KiB pages (as the writer's staging does).
    constexpr std::size_t huge = 2u << 20;
    const auto bytes = (memory_bytes_ + huge - 1) / huge * huge;
    page_memory m{static_cast<std::byte*>(std::aligned_alloc(huge, bytes))};
    if (!m) throw std::bad_alloc();
    ::madvise(m.get(), bytes, MADV_HUGEPAGE);
    return m;
  }

  void settle_oldest() {
    auto b = std::move(in_flight_.front());
    in_flight_.pop_front();
    const auto statuses = b.result.get();
    for (std::size_t i = 0; i < statuses.size(); ++i) {
      if (statuses[i].ok()) {
        ++acked_;
        if (gen_.log_acked) std::cout << "acked " << printable_key(b.keys[i]) << "\n";
      } else if (failed_++ == 0) {
        std::cerr << "spillway gen: " << printable_key(b.keys[i]) << ": "
                  << to_string(statuses[i]) << "\n";
      }
    }
    if (gen_.log_acked) std::cout.flush();
    shown_.advance(statuses.size(), statuses.size() * gen_.size);
    spare_.push_back(std::move(b.memory));
  }

  node& store_;
  const gen_options& gen_;
  std::deque<batch> in_flight_;
  const std::size_t memory_bytes_;  // of each batch's memory
  std::vector<page_memory> spare_;  // of batches answered
  std::uint64_t acked_ = 0, failed_ = 0;
  progress shown_;
  bench::stopwatch clock_;
};

}  // namespace

int run_gen(const node_config& config, const gen_options& gen) {
  // Puts of about 16 MiB: big enough to stream, small enough to keep several going.
  const std::uint64_t per_put =
    gen.keys_per_put != 0 ? gen.keys_per_put
                          : std::max<std::uint64_t>(1, (16u << 20) / std::max(gen.size, 1ul));
  node store{config};
  gen_pipeline pipeline{store, gen, per_put};
  for (std::uint64_t next = 0; next < gen.count; next = std::min(gen.count, next + per_put))
    pipeline.put(next, std::min(gen.count, next + per_put));
  const auto failed = pipeline.finish();
  const double bytes = static_cast<double>(pipeline.acked() * gen.size);
  std::printf("wrote %llu keys, %.0f bytes in %.3f s: %.2f GB/s\n",
              static_cast<unsigned long long>(pipeline.acked()), bytes, pipeline.seconds(),
              bytes / pipeline.seconds() / 1e9);
  return failed == 0 ? 0 : 1;
}

int run_inspect(const node_config& config, bool verify) {
  // No node may write meanwhile.
  const data_dir_lock lock{config.storage.data_dir, static_cast<mode_t>(config.storage.file_mode)};
  progress shown{"inspect --verify", "buckets", 0};
  const auto r = inspect_store(config.storage.data_dir, verify, verify ? &shown : nullptr);
  shown.finish();
  std::cout << "buckets " << r.buckets << "\nrecords " << r.records << "\nkeys " << r.keys
            << "\nfile bytes " << r.file_bytes << "\nlive bytes " << r.live_bytes
            << "\ngarbage bytes " << r.garbage_bytes << "\nforget log entries "
            << r.forget_entries << " bytes " << r.forget_bytes << " records forgotten "
            << r.forgotten_records << " torn bytes " << r.forget_torn_bytes << "\n";
  for (const auto& d : r.forget_damaged) std::cout << "damaged forget.log " << d << "\n";
  for (const auto& b : r.sound_buckets)
    std::cout << "bucket " << b.file << " version " << b.format_version << " records "
              << b.records << "\n";
  for (const auto& f : r.unsealed) std::cout << "unsealed " << f
                                              << " (recovery seals its whole records)\n";
  for (const auto& d : r.damaged) std::cout << "damaged " << d << "\n";
  for (const auto& u : r.unreadable) std::cout << "unreadable " << u << " (left in place)\n";
  for (const auto& b : r.bad_records)
    std::cout << "bad record: bucket " << b.bucket_file << " key '" << printable_key(b.key)
              << "' offset " << b.offset << ": " << b.problem << "\n";
  if (verify) std::cout << "verified: " << r.bad_records.size() << " bad records\n";
  return r.bad_records.empty() && r.damaged.empty() && r.unreadable.empty() &&
             r.forget_damaged.empty()
           ? 0
           : 1;
}

}  // namespace spillway
