#include "tools/soak_schedule.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "tools/generated_value.hpp"

namespace spillway::soak {
namespace {

constexpr std::uint32_t page = 4096;
constexpr std::uint32_t value_bytes_max = 256 << 10;
constexpr std::uint32_t views_held_max = 2;

// How often each operation comes, out of the sum; release_view only while one is held.
constexpr std::pair<op_kind, unsigned> weights[] = {
  {op_kind::put, 16},           {op_kind::put_from, 8},
  {op_kind::get_view, 14},      {op_kind::get_into_registered, 8},
  {op_kind::get_into_plain, 6}, {op_kind::hold_view, 4},
  {op_kind::release_view, 4},   {op_kind::get_during_put, 5},
  {op_kind::remove, 5},         {op_kind::flush, 4},
  {op_kind::fs_fault, 6},       {op_kind::fs_clear, 5},
  {op_kind::restart, 2},        {op_kind::transfer, 5},
  {op_kind::peer_restart, 1},
};
constexpr std::uint32_t transfer_bytes_max = 2 << 20;

const char* name_of(op_kind kind) {
  switch (kind) {
    case op_kind::start: return "start";
    case op_kind::put: return "put";
    case op_kind::put_from: return "put_from";
    case op_kind::get_view: return "get_view";
    case op_kind::get_into_registered: return "get_into_registered";
    case op_kind::get_into_plain: return "get_into_plain";
    case op_kind::hold_view: return "hold_view";
    case op_kind::release_view: return "release_view";
    case op_kind::get_during_put: return "get_during_put";
    case op_kind::remove: return "remove";
    case op_kind::flush: return "flush";
    case op_kind::fs_fault: return "fs_fault";
    case op_kind::fs_clear: return "fs_clear";
    case op_kind::restart: return "restart";
    case op_kind::transfer: return "transfer";
    case op_kind::peer_restart: return "peer_restart";
  }
  return "?";
}

void list(std::ostream& out, const char* name, const std::vector<std::uint32_t>& values) {
  if (values.empty()) return;
  out << ' ' << name << '=';
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
}

}  // namespace

std::string key_name(std::uint32_t index) { return generated_key("soak-", index); }

const char* name_of(fs_family family) {
  switch (family) {
    case fs_family::read_eio: return "read_eio";
    case fs_family::read_short: return "read_short";
    case fs_family::read_delay: return "read_delay";
    case fs_family::write_enospc: return "write_enospc";
    case fs_family::sync_eio: return "sync_eio";
    case fs_family::direct_einval: return "direct_einval";
  }
  return "?";
}

std::string describe(const op& o) {
  std::ostringstream out;
  out << "op " << o.index << ' ' << name_of(o.kind);
  list(out, "keys", o.keys);
  list(out, "sizes", o.sizes);
  list(out, "read_keys", o.read_keys);
  if (o.kind == op_kind::fs_fault) out << " family=" << name_of(o.family) << " rule=" << o.rule;
  if (o.kind == op_kind::transfer) out << " offset=" << o.offset;
  if (o.kind == op_kind::start || o.kind == op_kind::peer_restart)
    out << " peer_drop_lane_after_slices=" << o.peer.drop_lane_after_slices
        << " peer_kill_after_slices=" << o.peer.kill_after_slices;
  if (o.kind == op_kind::start || o.kind == op_kind::restart)
    out << " dice_seed=" << o.dice.seed << " ring_submit_failure_rate="
        << o.dice.ring_submit_failure_rate << " reader_throw_after_reads="
        << o.dice.reader_throw_after_reads << " fail_registration=" << o.dice.fail_registration
        << " read_error_rate=" << o.dice.read_error_rate
        << " corrupt_rate=" << o.dice.corrupt_rate;
  return out.str();
}

schedule::schedule(std::uint64_t seed) : prng_(seed) {}

std::uint64_t schedule::draw(std::uint64_t bound) { return prng_() % bound; }

bool schedule::coin(unsigned percent) { return draw(100) < percent; }

std::vector<std::uint32_t> schedule::some_keys(std::uint32_t most) {
  std::vector<std::uint32_t> keys(1 + draw(most));
  for (auto& k : keys) k = static_cast<std::uint32_t>(draw(keyspace));
  return keys;
}

// Half of them whole pages (a put_from's in-place path), half any size up to the limit.
std::vector<std::uint32_t> schedule::sizes_for(std::size_t count) {
  std::vector<std::uint32_t> sizes(count);
  for (auto& s : sizes)
    s = coin(50) ? page * static_cast<std::uint32_t>(1 + draw(value_bytes_max / page))
                 : static_cast<std::uint32_t>(1 + draw(value_bytes_max));
  return sizes;
}

epoch_dice schedule::dice() {
  epoch_dice d;
  d.seed = 1 + draw(1u << 30);
  d.ring_submit_failure_rate = coin(30) ? 0.2 : 0;
  d.reader_throw_after_reads = coin(30) ? 20 + draw(200) : 0;
  d.fail_registration = coin(25);
  d.read_error_rate = coin(15) ? 0.02 : 0;
  d.corrupt_rate = coin(15) ? 0.02 : 0;
  return d;
}

peer_dice schedule::peer_faults() {
  peer_dice d;
  d.drop_lane_after_slices = coin(40) ? 20 + draw(100) : 0;
  d.kill_after_slices = coin(25) ? 20 + draw(300) : 0;
  return d;
}

// Each rule hits the data dir's files only, never the mount's other paths.
void schedule::fill_fs_fault(op& o) {
  constexpr double probabilities[] = {0.05, 0.2, 0.5, 1.0};
  o.family = static_cast<fs_family>(draw(6));
  const auto chance = " probability=" + std::to_string(probabilities[draw(4)]) +
                      " seed=" + std::to_string(1 + draw(1u << 30));
  switch (o.family) {
    case fs_family::read_eio: o.rule = "op=read path=/data/* fault=eio"; break;
    // O_DIRECT reads only: fuse takes a short answer to a page-cache read for the end of
    // the file and shrinks the file's size in the kernel, which no disk does.
    case fs_family::read_short: o.rule = "op=read path=/data/* direct=1 fault=short"; break;
    case fs_family::read_delay:
      o.rule = "op=read path=/data/* fault=delay delay_ms=" + std::to_string(1 + draw(20));
      break;
    case fs_family::write_enospc: o.rule = "op=write path=/data/* fault=enospc"; break;
    case fs_family::sync_eio: {
      constexpr const char* syncs[] = {"fdatasync", "fsync", "fsyncdir"};
      o.rule = std::string{"op="} + syncs[draw(3)] + " path=/data* fault=eio";
      break;
    }
    case fs_family::direct_einval: o.rule = "op=open path=/data/* direct=1 fault=einval"; break;
  }
  o.rule += chance;
}

op_kind schedule::pick_kind() {
  unsigned total = 0;
  for (const auto& [kind, weight] : weights)
    if (kind != op_kind::release_view || views_held_ > 0) total += weight;
  auto at = draw(total);
  for (const auto& [kind, weight] : weights) {
    if (kind == op_kind::release_view && views_held_ == 0) continue;
    if (at < weight) return kind;
    at -= weight;
  }
  return op_kind::get_view;
}

op schedule::next() {
  op o;
  o.index = index_++;
  o.kind = o.index == 0 ? op_kind::start : pick_kind();
  if (o.kind == op_kind::hold_view && views_held_ == views_held_max) o.kind = op_kind::get_view;
  switch (o.kind) {
    case op_kind::start:
      o.dice = dice();
      o.peer = peer_faults();
      break;
    case op_kind::restart:
      o.dice = dice();
      views_held_ = 0;
      break;
    case op_kind::peer_restart: o.peer = peer_faults(); break;
    case op_kind::transfer:
      o.sizes = {static_cast<std::uint32_t>(1 + draw(transfer_bytes_max))};
      o.offset = draw(peer_segment_bytes - transfer_bytes_max);
      break;
    case op_kind::put:
    case op_kind::put_from:
      o.keys = some_keys(4);
      o.sizes = sizes_for(o.keys.size());
      break;
    case op_kind::get_during_put:  // about 2 MiB of puts: a bucket or two evicted
      o.read_keys = some_keys(8);
      o.keys = some_keys(12);
      o.sizes = sizes_for(o.keys.size());
      std::erase_if(o.read_keys, [&](std::uint32_t k) {  // each read has one answer
        return std::find(o.keys.begin(), o.keys.end(), k) != o.keys.end();
      });
      break;
    case op_kind::hold_view:
      ++views_held_;
      o.keys = some_keys(8);
      break;
    case op_kind::release_view: --views_held_; break;
    case op_kind::fs_fault: fill_fs_fault(o); break;
    case op_kind::flush:
    case op_kind::fs_clear: break;
    default: o.keys = some_keys(8); break;
  }
  return o;
}

}  // namespace spillway::soak
