// `spillway bench store`: the catalog's memory per key, and how long recovery takes
// for a store of many buckets (indexes only, never values).
//
// Memory is what malloc reports in use (mallinfo2) before the catalog is spawned and
// after it has published every key, with the published messages freed: the key map,
// the bucket table and the bucket actors, all of it.
#include <malloc.h>

#include <cstdio>
#include <filesystem>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/catalog.hpp"
#include "runtime/storage/bucket_writer.hpp"
#include "tools/generated_value.hpp"
#include "runtime/storage/recovery.hpp"
#include "tools/bench_util.hpp"
#include "tools/commands.hpp"

namespace spillway {
namespace {

constexpr std::size_t keys_per_bucket = 500;  // storage.bucket_keys_limit's default

double catalog_bytes_per_key(std::uint64_t keys, const std::string& prefix) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  const auto before = ::mallinfo2().uordblks;
  auto catalog = spawn_catalog(system, {"/nonexistent", 1ull << 62, 0, false, false}, {});
  for (std::uint64_t first = 0; first < keys; first += keys_per_bucket) {
    bucket_records bucket{make_bucket_id(1, first + 1), "/nonexistent", 1u << 28, {}};
    for (std::uint64_t k = first; k < std::min(keys, first + keys_per_bucket); ++k)
      bucket.entries.push_back({generated_key(prefix, k), 1u << 20, 4096 * (k - first + 1), 0});
    self->request(catalog, caf::infinite, caf::publish_atom_v, std::move(bucket))
      .receive([](caf::ok_atom) {}, [](caf::error&) {});
  }
  const auto after = ::mallinfo2().uordblks;
  self->send_exit(catalog, caf::exit_reason::user_shutdown);
  return static_cast<double>(after - before) / static_cast<double>(keys);
}

// Writes `buckets` sealed bucket files of 4 small records each (untimed), then
// times recovery over them.
double recovery_seconds(const std::filesystem::path& dir, std::uint64_t buckets) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    bucket_writer writer{{dir, 1, true, false}};
    const std::string value(1000, 'v');
    const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(value.data()),
                                           value.size()};
    for (std::uint64_t b = 0; b < buckets; ++b) {
      writer.open(make_bucket_id(1, b + 1));
      for (int r = 0; r < 4; ++r) writer.append(generated_key("k", b * 4 + r), bytes);
      bucket_index sealed;
      if (writer.seal(sealed)) throw std::runtime_error("bench store: sealing failed");
    }
  }
  bench::stopwatch clock;
  const auto recovered = recover_data_dir(dir, {});
  const double seconds = clock.seconds();
  if (recovered.buckets.size() != buckets) throw std::runtime_error("bench store: lost buckets");
  std::filesystem::remove_all(dir);
  return seconds;
}

}  // namespace

int run_bench_store(const bench_store_options& options) {
  std::printf("catalog, %llu keys of 14 bytes: %.1f bytes per key (+ the key)\n",
              static_cast<unsigned long long>(options.keys),
              catalog_bytes_per_key(options.keys, "gen-") - 14);
  std::printf("catalog, %llu keys of 64 bytes: %.1f bytes per key (+ the key)\n",
              static_cast<unsigned long long>(options.keys),
              catalog_bytes_per_key(options.keys, std::string(54, 'h')) - 64);
  std::printf("recovery of %llu buckets (indexes only): %.3f s\n",
              static_cast<unsigned long long>(options.buckets),
              recovery_seconds(options.dir / "spillway-bench-store", options.buckets));
  return 0;
}

}  // namespace spillway
