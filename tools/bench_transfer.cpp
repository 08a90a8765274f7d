// `spillway bench transfer`: the seed PR's table on this machine (BENCHMARKS.md
// "Transfer"). Per case, one batch of equal write requests from a local buffer into a
// registered segment, on `local` (memcpy into this process) and `tcp` (a transfer-peer
// child on 127.0.0.1); contenders `naive` and `watermark` interleaved with the limit
// (one memcpy, or one plain TCP stream, of the same bytes), run after run. Every run
// stamps the source anew and checks the destination after: bytes are verified.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/transport_host.hpp"
#include "actors/transport_routes.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/io/progress.hpp"
#include "runtime/storage/crc32c.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "tools/bench_transfer.hpp"
#include "tools/bench_util.hpp"
#include "tools/commands.hpp"
#include "tools/transfer_peer_process.hpp"

namespace spillway {
namespace {

using namespace bench;


std::byte* map_buffer(std::uint64_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap of a bench buffer failed");
  std::memset(p, 1, size);  // fault the pages in before anything is timed
  return static_cast<std::byte*>(p);
}

// Writes `stamp` at the start of every chunk, so a run that moved nothing fails.
void stamp_source(std::byte* source, const transfer_case& c, std::uint64_t stamp) {
  for (std::uint64_t i = 0; i < c.chunks; ++i)
    std::memcpy(source + i * c.chunk_bytes(), &stamp, sizeof stamp);
}

transfer_batch case_batch(std::byte* source, std::uint64_t segment, const transfer_case& c) {
  transfer_batch batch(c.chunks);
  for (std::uint64_t i = 0; i < c.chunks; ++i)
    batch[i] = {transfer_op::write, source + i * c.chunk_bytes(), segment,
                i * c.chunk_bytes(), c.chunk_bytes()};
  return batch;
}

// One contender's run: the batch, timed from submit to the last status.
contender_run run_batch(caf::actor_system& system, const slicer_actor& slicer,
                        transfer_batch batch) {
  caf::scoped_actor self{system};
  contender_run run;
  const stopwatch clock;
  self->request(slicer, caf::infinite, transfer_atom_v, std::move(batch))
    .receive(
      [&](transfer_reply& reply) {
        run.seconds = clock.seconds();
        for (const auto& s : reply.statuses)
          if (!s.ok()) throw std::runtime_error("a request failed: " + to_string(s));
        run.first_slice_us = static_cast<double>(reply.first_slice_ns) / 1000;
        run.slicer_ns_per_slice =
          static_cast<double>(reply.slicing_ns) / static_cast<double>(reply.slices);
      },
      [&](caf::error& err) { throw std::runtime_error(system.render(err)); });
  return run;
}

// One transport under test: both contenders' slicers, and the limit run on the same
// bytes. `verify` throws when the segment does not hold the source's first `total`.
struct bench_target {
  std::string transport;
  transfer_route naive, watermark;
  std::uint64_t segment = 0;
  std::function<void(std::uint64_t total)> limit;
  std::function<void(std::uint64_t total)> verify;
};

transfer_section contender_section(const char* slicing) {
  transfer_section transfer;
  transfer.slicing = slicing;
  transfer.slicers = 1;
  return transfer;
}

// The limit, then both contenders, `runs` times; the contenders take turns going
// first (A B C, A C B, ...), so neither always runs on the other's leftovers.
case_result run_case(caf::actor_system& system, bench_target& target, std::byte* source,
                     const transfer_case& shape, unsigned runs) {
  case_result result{target.transport, shape, {}, {}, {}};
  std::uint64_t stamp = shape.chunks * 1000;
  progress shown{"bench transfer " + target.transport + " " + shape.name(), "runs", runs};
  for (unsigned run = 0; run < runs; ++run) {
    stamp_source(source, shape, ++stamp);
    const stopwatch clock;
    target.limit(shape.total());
    result.limit_seconds.push_back(clock.seconds());
    target.verify(shape.total());
    const bool naive_first = run % 2 == 0;
    for (auto* route : {naive_first ? &target.naive : &target.watermark,
                        naive_first ? &target.watermark : &target.naive}) {
      stamp_source(source, shape, ++stamp);
      auto& runs_of = route == &target.naive ? result.naive : result.watermark;
      auto batch = case_batch(source, target.segment, shape);
      runs_of.push_back(run_batch(system, route->pick(), std::move(batch)));
      target.verify(shape.total());
    }
    shown.advance(1, 3 * shape.total());  // the limit and both contenders
  }
  return result;
}

// One plain TCP stream of `total` bytes into the peer's sink, acknowledged at the end.
void stream_to_peer(std::uint16_t port, const std::byte* source, std::uint64_t total) {
  int error = 0;
  const auto fd = connect_tcp("127.0.0.1", port, error);
  char done = 0;
  if (!fd || !send_all(fd.get(), &total, sizeof total) || !send_all(fd.get(), source, total) ||
      !recv_all(fd.get(), &done, 1))
    throw std::runtime_error("the plain TCP stream to the peer failed");
}

void fail_unless(bool same, const std::string& transport) {
  if (!same) throw std::runtime_error(transport + ": the destination differs from the source");
}

bool wanted(const std::vector<std::string>& only, const std::string& name) {
  return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
}

// The seed PR's table, less the rows --case leaves out.
std::vector<transfer_case> table_of(const bench_transfer_options& options) {
  const std::vector<transfer_case> table{{200, 5000},  {200, 10000}, {300, 8000},
                                         {400, 10000}, {500, 15000}, {600, 12000},
                                         {700, 20000}, {700, 10000}};
  std::vector<transfer_case> rows;
  for (const auto& shape : table)
    if (wanted(options.cases, shape.name())) rows.push_back(shape);
  if (rows.empty()) throw std::runtime_error("--case: no such row; the rows are 200MB/5000, ...");
  return rows;
}

}  // namespace

int run_bench_transfer(const bench_transfer_options& options) {
  const auto table = table_of(options);
  std::uint64_t segment_bytes = 0;  // buffers and segments hold the largest row
  for (const auto& shape : table) segment_bytes = std::max(segment_bytes, shape.total());
  caf::actor_system_config config;
  configure_actor_system(config);
  caf::actor_system system{config};
  std::byte* source = map_buffer(segment_bytes);
  std::vector<case_result> results;
  std::vector<bench_target*> targets;

  bench_target local;
  std::byte* local_memory = nullptr;
  if (wanted(options.transports, "local")) {
    local_memory = map_buffer(segment_bytes);
    auto segments = std::make_shared<segment_table>(transfer_identity(system));
    local.transport = "local";
    local.naive = open_local_route(system, contender_section("naive"), segments);
    local.watermark = open_local_route(system, contender_section("watermark"), segments);
    local.segment = segments->add(local_memory, segment_bytes, {}).id;  // its own routes only
    for (auto* route : {&local.naive, &local.watermark})
      for (const auto& slicer : route->slicers)
        caf::anon_send(slicer, caf::update_atom_v, segments->list());
    local.limit = [&](std::uint64_t total) { std::memcpy(local_memory, source, total); };
    local.verify = [&](std::uint64_t total) {
      fail_unless(std::memcmp(local_memory, source, total) == 0, "local");
    };
    targets.push_back(&local);
  }

  std::optional<transfer_peer_process> peer;
  bench_target tcp;
  if (wanted(options.transports, "tcp")) {
    peer.emplace(std::to_string(segment_bytes), "",
                 std::vector<std::string>{transfer_identity(system)});
    tcp.transport = "tcp";
    tcp.segment = peer->segment;
    for (auto* route : {&tcp.naive, &tcp.watermark})
      *route = open_tcp_route(system,
                              contender_section(route == &tcp.naive ? "naive" : "watermark"),
                              "127.0.0.1", peer->control_port);
    tcp.limit = [&](std::uint64_t total) { stream_to_peer(peer->stream_port, source, total); };
    tcp.verify = [&](std::uint64_t total) {
      fail_unless(range_checksum(system, tcp.watermark.host, peer->segment, 0, total) ==
                    crc32c(source, total), "tcp");
    };
    targets.push_back(&tcp);
  }

  for (auto* target : targets) {
    for (const auto& shape : table) {
      results.push_back(run_case(system, *target, source, shape, options.runs));
      std::cerr << target->transport << " " << shape.name() << " done\n";
    }
    close_route(target->naive);
    close_route(target->watermark);
  }
  std::cout << "bench transfer: medians of " << options.runs << " interleaved runs\n";
  print_transfer_table(std::cout, results);
  if (!options.json.empty()) std::ofstream{options.json} << transfer_json(results, options.runs);
  return 0;
}

}  // namespace spillway
