// State chart:
//   resolving --catalog--> pinning --every bucket--> allocating --grant--> reading
//   reading --every read checked--> answered (buckets unpinned, lease clock started)
//   A batch that copies out in waves takes what fits and asks again for the rest; one
//   whose caller holds every value at once asks for all of it in one grant (a value the
//   whole arena cannot hold with the others fails as too_large).
//   The deadline (read.timeout_ms) fails the reads still waiting for arena space; a
//   read already in flight is always waited for, since its extent is not ours to lend;
//   a caller that copies gets the keys finished by then at once (hand_over_finished).
//   A read refused with EINVAL on an O_DIRECT file asks its bucket for the file opened
//   buffered and goes again (and tells the catalog, which moves every bucket over).
// Reads in place: a caller that names a target per key (get_batch_into) has a v2 value
// read straight into it when the target is page-aligned (O_DIRECT's rule for memory) and
// large enough: a value of whole pages in one read; else its whole pages there and its
// last, partial page into a 4 KiB extent (the bounce), whose value bytes alone are
// copied over once the two pieces pass their crc together, so that nothing past the
// value's length is written. A registered target is read with read_fixed (its slot).
// Such a read is placed from the start: it needs no extent and is never given up at
// the deadline, as the kernel may still be writing the caller's memory.
#include "actors/batch.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <numeric>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "runtime/storage/bucket_format.hpp"
#include "runtime/storage/printable_key.hpp"
#include "runtime/io/read_faults.hpp"

namespace spillway {
namespace {

namespace bf = bucket_format;

constexpr std::uint32_t no_reader = UINT32_MAX;

// What one read of a value is: all of it, or one of the two pieces of a value read in
// place (its whole pages into the target, its last page into a bounce extent), which
// follow each other in `plans`.
enum class piece : std::uint8_t { whole, bulk, tail };

// One record to read: where it is on disk, where it goes, and who reads it.
struct read_plan {
  std::uint32_t key = 0;       // position in the request
  std::uint32_t bucket = 0;    // position in `buckets`
  record_location where;
  read_item item;              // tag = position in `plans`
  read_fault key_fault = no_fault;  // what the [fault] config names for this key
  std::uint32_t reader = no_reader;
  piece part = piece::whole;
  bool in_place = false;       // reads into the caller's target, not an extent
  bool placed = false;         // has somewhere to read into
  bool landed = false;         // its read came back whole
  bool done = false;
};

struct pinned_bucket {
  bucket_reads reads;
  pinned_file file;
  int direct_fd = -1;                  // the O_DIRECT descriptor reads were first sent to
  std::vector<std::uint32_t> refused;  // plans waiting for the buffered one
};

struct batch_state {
  batch_context context;
  std::vector<std::string> keys;
  get_reply reply;
  caf::typed_response_promise<get_reply> promise;
  caf::actor holder;                        // who the reply goes to: reads the leases
  std::chrono::steady_clock::time_point asked;
  std::vector<pinned_bucket> buckets;
  std::vector<read_plan> plans;
  std::vector<std::uint64_t> reader_bytes;  // outstanding per reader
  std::vector<bool> reader_alive;
  bool resolved = false;                    // the catalog answered (or could not)
  std::size_t pins_missing = 0;
  std::size_t open_reads = 0;               // plans neither done nor failed
  std::size_t next_group = 0;               // group mode: the first plan of the next group
  bool alloc_pending = false;               // an alloc is waiting at the arena
  std::vector<bool> sent;                   // keys already answered in a wave
  io_report copies;                         // the read path's bytes: in place, bounced, copied
  static inline const char* name = "batch";

  bool group_mode() const { return context.config.mode == "group"; }
  bool in_waves() const { return static_cast<bool>(context.wave_sink); }

  void settle(read_plan& p, key_status status) {
    reply.items[p.key].status = status;
    finish(p);
  }
  void finish(read_plan& p) {
    p.done = true;
    --open_reads;
  }
  // A value's bulk that is not sent yet waits for its tail's extent (see start_reads);
  // the tail is the plan after it.
  bool bulk_waits(std::size_t tail) const {
    return plans[tail - 1].reader == no_reader && !plans[tail - 1].done;
  }
  // Every plan that has nowhere to read into fails with `status`; a bulk that waited
  // for its tail ends with it, unread.
  void settle_unplaced(key_status status) {
    for (std::size_t i = 0; i < plans.size(); ++i) {
      auto& p = plans[i];
      if (p.placed || p.done) continue;
      settle(p, status);
      if (p.part == piece::tail && bulk_waits(i)) finish(plans[i - 1]);
    }
  }
};

using batch_pointer = batch_actor::stateful_pointer<batch_state>;

std::chrono::milliseconds timeout_of(batch_pointer self) {
  return std::chrono::milliseconds{self->state.context.config.timeout_ms};
}

void finish_if_done(batch_pointer self);
void allocate(batch_pointer self);

// The keys finished and not yet answered, as a reply of their own, with every lease so
// far (each now holds finished reads only).
get_reply take_finished(batch_state& st) {
  std::vector<bool> open(st.keys.size(), false);
  for (const auto& p : st.plans) open[p.key] = open[p.key] || !p.done;
  get_reply part;
  part.leases = std::exchange(st.reply.leases, {});
  for (std::uint32_t k = 0; k < st.keys.size(); ++k) {
    if (st.sent[k] || open[k]) continue;
    part.positions.push_back(k);
    part.items.push_back(st.reply.items[k]);
    st.sent[k] = true;
  }
  return part;
}

// A caller that copies may have the finished keys now: when the arena cannot hold the
// rest until their extents come back, this is what brings them back.
void maybe_send_wave(batch_pointer self) {
  auto& st = self->state;
  if (!st.in_waves() || !st.alloc_pending) return;
  const bool reading = std::any_of(st.plans.begin(), st.plans.end(),
                                   [](const auto& p) { return p.placed && !p.done; });
  if (reading) return;
  auto part = take_finished(st);
  if (part.items.empty()) return;
  for (auto lease : part.leases) self->send(st.context.arena, ready_atom_v, lease, st.holder);
  caf::anon_send(st.context.wave_sink, wave_atom_v, std::move(part));
}

// At the deadline, with a read still in flight (a disk that stopped answering), a caller
// that copies gets the keys finished so far, so that only the late ones fail as timeout
// there. The leases stay here: the late read lands in one of them, and they go with the
// final reply once it completed.
void hand_over_finished(batch_pointer self) {
  auto& st = self->state;
  if (!st.in_waves()) return;
  auto leases = std::exchange(st.reply.leases, {});
  auto part = take_finished(st);
  st.reply.leases = std::move(leases);
  if (!part.items.empty()) caf::anon_send(st.context.wave_sink, wave_atom_v, std::move(part));
}

// The reader with the fewest bytes outstanding, alive; no_reader if none is.
std::uint32_t least_loaded(const batch_state& st) {
  std::uint32_t best = no_reader;
  for (std::uint32_t r = 0; r < st.reader_bytes.size(); ++r)
    if (st.reader_alive[r] && (best == no_reader || st.reader_bytes[r] < st.reader_bytes[best]))
      best = r;
  return best;
}

// Sends each plan in `which` to a reader, the least loaded first.
void dispatch(batch_pointer self, const std::vector<std::uint32_t>& which) {
  auto& st = self->state;
  std::vector<std::vector<read_item>> per_reader(st.context.readers.size());
  for (auto index : which) {
    auto& p = st.plans[index];
    const auto bulk_reader = p.part == piece::tail ? st.plans[index - 1].reader : no_reader;
    const auto r = bulk_reader != no_reader && st.reader_alive[bulk_reader] ? bulk_reader
                                                                             : least_loaded(st);
    if (r == no_reader) {
      st.settle(p, {key_error::unavailable, 0});
      continue;
    }
    p.reader = r;
    st.reader_bytes[r] += p.item.length;
    per_reader[r].push_back(p.item);
  }
  const auto client = caf::actor_cast<read_client>(self);
  for (std::uint32_t r = 0; r < per_reader.size(); ++r)
    if (!per_reader[r].empty())
      self->send(st.context.readers[r], read_atom_v, client, std::move(per_reader[r]));
}

// Group mode, the RFC's baseline: up to queue_depth reads of one bucket, and the next
// group only once the whole group is back. Reads refused O_DIRECT and waiting for
// their buffered descriptor are not back; a group settled without being sent (no
// reader left) is back at once.
void dispatch_next_group(batch_pointer self) {
  auto& st = self->state;
  auto in_flight = [&st] {
    return std::any_of(st.plans.begin(), st.plans.end(),
                       [](const auto& p) { return p.reader != no_reader && !p.done; }) ||
           std::any_of(st.buckets.begin(), st.buckets.end(),
                       [](const auto& b) { return !b.refused.empty(); });
  };
  while (!in_flight()) {
    std::vector<std::uint32_t> group;
    while (st.next_group < st.plans.size() && group.size() < st.context.config.queue_depth) {
      const auto& p = st.plans[st.next_group];
      if (p.done) {  // failed before it was read (too large, bucket gone)
        ++st.next_group;
        continue;
      }
      if (!p.placed) break;  // waits for its extent; the next grant goes on from here
      if (!group.empty() && p.bucket != st.plans[group[0]].bucket) break;
      group.push_back(static_cast<std::uint32_t>(st.next_group++));
    }
    if (group.empty()) return;
    dispatch(self, group);
  }
}

// After reads came back, were sent again or settled: group mode's next group may go,
// a wave may hand extents back to an arena waiting for them, and the batch may be done.
void go_on(batch_pointer self) {
  if (self->state.group_mode()) dispatch_next_group(self);
  maybe_send_wave(self);
  finish_if_done(self);
}

// Points a plan at its bucket's file as pinned. The fault that refuses O_DIRECT reads
// applies to reads of an O_DIRECT descriptor only; the key's own fault to the others.
void aim(batch_state& st, read_plan& p) {
  const auto& b = st.buckets[p.bucket];
  p.item.fd = b.file.fd;
  const bool refuse = st.context.faults.enabled && st.context.faults.refuse_o_direct_reads;
  p.item.fault = refuse && b.file.direct ? fail_with_einval : p.key_fault;
}

// The filesystem refused an O_DIRECT read: the plan goes again through the bucket's
// buffered descriptor, which the first refused plan of the bucket asks for.
void read_buffered(batch_pointer self, read_plan& p) {
  auto& st = self->state;
  auto& b = st.buckets[p.bucket];
  p.reader = no_reader;
  if (!b.file.direct) {  // the buffered descriptor is here already
    aim(st, p);
    return dispatch(self, {p.item.tag});
  }
  b.refused.push_back(p.item.tag);
  if (b.refused.size() > 1) return;
  self->send(st.context.catalog, buffered_atom_v);
  const auto bucket = p.bucket;
  auto give_up = [self, bucket](std::int32_t sys_errno) {
    auto& st = self->state;
    for (auto i : std::exchange(st.buckets[bucket].refused, {}))
      st.settle(st.plans[i], {key_error::io_error, sys_errno});
    go_on(self);
  };
  self->request(b.reads.bucket, timeout_of(self), buffered_atom_v)
    .then(
      [self, bucket, give_up](pinned_file& file) {
        auto& st = self->state;
        if (file.direct) return give_up(file.open_errno);  // the buffered open failed
        st.buckets[bucket].file = file;
        for (auto& q : st.plans)
          if (q.bucket == bucket && q.reader == no_reader && !q.done) aim(st, q);
        dispatch(self, std::exchange(st.buckets[bucket].refused, {}));
        go_on(self);
      },
      [give_up](caf::error&) { give_up(EINVAL); });  // no answer: the refusal is all we know
}

bf::index_entry wanted(const batch_state& st, const read_plan& p) {
  return {st.keys[p.key], p.where.value_size, p.where.offset, p.where.crc};
}

// A value read in place in two pieces is checked once both landed; a piece that failed
// has named the key's error already. Only then is the tail copied into the target.
void check_pieces(batch_pointer self, read_plan& p) {
  auto& st = self->state;
  auto& bulk = p.part == piece::bulk ? p : st.plans[p.item.tag - 1];
  auto& tail = p.part == piece::tail ? p : st.plans[p.item.tag + 1];
  const auto& other = p.part == piece::bulk ? tail : bulk;
  if (!other.done || !other.landed) return st.finish(p);
  const auto want = wanted(st, p);
  const auto problem = bf::check_split_value(
    {reinterpret_cast<const std::byte*>(bulk.item.address), bulk.item.length},
    {reinterpret_cast<const std::byte*>(tail.item.address), tail.item.length},
    st.buckets[p.bucket].file.bucket_id, want);
  if (!problem.empty()) {
    spdlog::error("batch: key '{}' in bucket {:016x} at offset {}: {}", printable_key(want.key),
                  st.buckets[p.bucket].file.bucket_id, want.offset, problem);
    return st.settle(p, {key_error::corrupt, 0});
  }
  const auto tail_bytes = want.value_size - bulk.item.length;
  std::memcpy(reinterpret_cast<void*>(bulk.item.address + bulk.item.length),
              reinterpret_cast<const void*>(tail.item.address), tail_bytes);
  auto& item = st.reply.items[p.key];
  item.address = bulk.item.address;
  item.size = want.value_size;
  st.copies.in_place_bytes += bulk.item.length;
  st.copies.bounced_bytes += tail.item.length;
  st.copies.copied_bytes += tail_bytes;
  st.settle(p, {});
}

// The value is handed out only if what was read holds exactly the record the index
// promised: in v2 the value's pages alone, checked against the key and crc of the index.
void check(batch_pointer self, read_plan& p, int result) {
  auto& st = self->state;
  if (result == -EINVAL && p.item.fd == st.buckets[p.bucket].direct_fd)
    return read_buffered(self, p);
  if (result < 0) {
    spdlog::error("batch: key '{}': read failed: {}", printable_key(st.keys[p.key]),
                  strerrorname_np(-result));
    return st.settle(p, {key_error::io_error, -result});
  }
  p.landed = true;
  if (p.part != piece::whole) return check_pieces(self, p);
  const auto& b = st.buckets[p.bucket];
  const auto want = wanted(st, p);
  bf::const_bytes value;
  const auto problem = bf::decode_value_read(
    b.reads.format_version, {reinterpret_cast<const std::byte*>(p.item.address), p.item.length},
    b.file.bucket_id, want, value);
  if (!problem.empty()) {
    spdlog::error("batch: key '{}' in bucket {:016x} at offset {}: {}", printable_key(want.key),
                  b.file.bucket_id, want.offset, problem);
    return st.settle(p, {key_error::corrupt, 0});
  }
  auto& item = st.reply.items[p.key];
  item.address = reinterpret_cast<std::uint64_t>(value.data());
  item.size = value.size();
  if (p.in_place) {
    st.copies.in_place_bytes += p.item.length;
  } else if (st.in_waves()) {  // a caller that takes waves copies every value out
    st.copies.bounced_bytes += p.item.length;
    st.copies.copied_bytes += value.size();
  }
  st.settle(p, {});
}

void on_read_done(batch_pointer self, const read_results& results) {
  auto& st = self->state;
  for (const auto& r : results) {
    if (r.tag >= st.plans.size()) continue;
    auto& p = st.plans[r.tag];
    if (p.done) continue;  // answered already (its reader was thought dead)
    st.reader_bytes[p.reader] -= p.item.length;
    check(self, p, r.result);
  }
  go_on(self);
}

void on_grant(batch_pointer self, arena_grant& grant) {
  auto& st = self->state;
  st.alloc_pending = false;
  if (!st.promise.pending()) {  // answered already (deadline): the extents go back
    self->send(st.context.arena, release_atom_v, grant.lease);
    return self->quit();
  }
  if (grant.lease != 0) st.reply.leases.push_back(grant.lease);
  std::vector<std::uint32_t> placed;
  std::size_t next = 0;
  for (std::uint32_t i = 0; i < st.plans.size() && next < grant.extents.size(); ++i) {
    auto& p = st.plans[i];
    if (p.placed || p.done) continue;
    const auto& e = grant.extents[next++];
    p.item.address = grant.chunk_addresses[e.chunk] + e.offset;
    p.item.chunk = e.chunk;
    p.placed = true;
    if (p.part == piece::tail && st.bulk_waits(i)) placed.push_back(i - 1);
    placed.push_back(i);
  }
  if (!st.in_waves())  // a whole grant: what it left out could never fit
    st.settle_unplaced({key_error::too_large, 0});
  if (st.group_mode()) dispatch_next_group(self);
  else dispatch(self, placed);
  const bool more = std::any_of(st.plans.begin(), st.plans.end(),
                                [](const auto& p) { return !p.placed && !p.done; });
  if (more) allocate(self);
  else finish_if_done(self);  // every reader gone: the plans settled as unavailable
}

// Asks the arena for the extents of every plan without one.
void allocate(batch_pointer self) {
  auto& st = self->state;
  std::vector<std::uint64_t> sizes;
  for (const auto& p : st.plans)
    if (!p.placed && !p.done) sizes.push_back(p.item.length);
  if (sizes.empty()) return finish_if_done(self);
  st.alloc_pending = true;
  // No timeout: the arena answers when space comes back, and the grant must reach us
  // even after our deadline, or its extents would be lost (see on_grant).
  self->request(st.context.arena, caf::infinite, alloc_atom_v, std::move(sizes), !st.in_waves())
    .then([self](arena_grant& grant) { on_grant(self, grant); },
          [self](caf::error&) {
            self->state.alloc_pending = false;
            self->state.settle_unplaced({key_error::unavailable, 0});
            finish_if_done(self);
          });
}

// Every bucket answered its pin: reads in place go at once (they need no extent), the
// others once the arena lends them one. A value read in place in two pieces waits for
// its tail's extent too, and its pieces go together to one reader, so that the value
// completes and is checked while other values are still read. Sent ahead of every
// tail, the bulks made every check wait for the batch's last reads, with the readers
// idle meanwhile (bench read `into`: busy 87 % of the time, against 97 % for reads
// into the arena).
void start_reads(batch_pointer self) {
  auto& st = self->state;
  if (st.group_mode()) {
    dispatch_next_group(self);
  } else {
    std::vector<std::uint32_t> ready;
    for (std::uint32_t i = 0; i < st.plans.size(); ++i)
      if (st.plans[i].placed && !st.plans[i].done && st.plans[i].part != piece::bulk)
        ready.push_back(i);
    dispatch(self, ready);
  }
  allocate(self);
}

// The keys of bucket `b` that could not be pinned fail with `status`; it holds no pin.
void fail_bucket(batch_state& st, std::uint32_t b, key_status status) {
  st.buckets[b].file.fd = -1;
  for (auto& p : st.plans)
    if (p.bucket == b && !p.done) st.settle(p, status);
}

// Pins each bucket. A bucket whose file would not open names the errno; one evicted
// and gone since resolve no longer has the keys; one that does not answer in time has
// the pin dropped when this batch goes (the bucket watches who pinned).
void pin_buckets(batch_pointer self) {
  auto& st = self->state;
  st.pins_missing = st.buckets.size();
  for (std::uint32_t b = 0; b < st.buckets.size(); ++b) {
    const auto n = static_cast<std::uint32_t>(st.buckets[b].reads.records.size());
    self->request(st.buckets[b].reads.bucket, timeout_of(self), pin_atom_v, n)
      .then(
        [self, b](pinned_file& file) {
          auto& st = self->state;
          if (file.fd < 0) {
            fail_bucket(st, b, {key_error::io_error, file.open_errno});
          } else {
            st.buckets[b].file = file;
            st.buckets[b].direct_fd = file.direct ? file.fd : -1;
            for (auto& p : st.plans)
              if (p.bucket == b) aim(st, p);
          }
          if (--st.pins_missing == 0) start_reads(self);
        },
        [self, b](caf::error& err) {
          fail_bucket(self->state, b,
                      {err == caf::sec::request_timeout ? key_error::timeout : key_error::not_found, 0});
          if (--self->state.pins_missing == 0) start_reads(self);
        });
  }
}

// Whether a value goes straight into the caller's target: a v2 value (on pages of its
// own), a page-aligned target with room for it, and at least one whole page of it to
// read there (a smaller one is all bounce).
bool reads_in_place(const read_target& t, std::uint32_t format_version, std::uint64_t value_size) {
  return format_version != 1 && t.address % bf::page_size == 0 && t.capacity >= value_size &&
         value_size >= bf::page_size;
}

// The plans of one record: one read into an extent, or into the caller's target in place
// (a second read for the partial last page, into an extent). Too large: it cannot ever
// fit its target or an extent.
void add_plans(batch_state& st, std::uint32_t bucket, std::uint32_t format_version,
               const record_location& r, read_fault key_fault) {
  read_plan p;
  p.key = r.key_index;
  p.bucket = bucket;
  p.where = r;
  p.key_fault = key_fault;
  const auto read = bf::value_read(format_version, r.offset, r.key_size, r.value_size);
  p.item.offset = read.offset;
  p.item.length = read.length;
  const auto& targets = st.context.targets;
  const read_target* target = r.key_index < targets.size() ? &targets[r.key_index] : nullptr;
  std::array<read_plan, 2> reads{p, p};
  std::size_t count = 1;
  if (target && reads_in_place(*target, format_version, r.value_size)) {
    auto& first = reads[0];
    first.in_place = first.placed = true;
    first.item.address = target->address;
    first.item.chunk = target->slot;
    first.item.length = r.value_size / bf::page_size * bf::page_size;
    if (first.item.length != read.length) {
      first.part = piece::bulk;
      reads[1].part = piece::tail;
      reads[1].item.offset = read.offset + first.item.length;
      reads[1].item.length = bf::page_size;
      reads[1].item.companion = true;
      count = 2;
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    reads[i].item.tag = static_cast<std::uint32_t>(st.plans.size());
    st.plans.push_back(reads[i]);
    ++st.open_reads;
  }
  const bool too_large = (target && target->capacity < r.value_size) ||
                         (!reads[0].placed && read.length > st.context.config.arena_chunk);
  if (!too_large) return;
  st.reply.items[r.key_index].size = r.value_size;  // what the caller would need
  for (auto i = st.plans.size() - count; i < st.plans.size(); ++i)
    st.settle(st.plans[i], {key_error::too_large, 0});
}

// Turns the catalog's answer into plans.
void on_resolved(batch_pointer self, resolve_reply& where) {
  auto& st = self->state;
  st.resolved = true;
  for (auto k : where.missing) st.reply.items[k].status = {key_error::not_found, 0};
  const auto& faults = st.context.faults;
  for (auto& reads : where.buckets) {
    const auto b = static_cast<std::uint32_t>(st.buckets.size());
    for (const auto& r : reads.records) {
      const auto& key = st.keys[r.key_index];
      auto named = [&key](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), key) != list.end();
      };
      auto key_fault = no_fault;
      if (faults.enabled && named(faults.read_error_keys)) key_fault = fail_with_eio;
      else if (faults.enabled && named(faults.short_read_keys)) key_fault = come_back_short;
      add_plans(st, b, reads.format_version, r, key_fault);
    }
    st.buckets.push_back({std::move(reads), {}, -1, {}});
  }
  if (st.buckets.empty()) return finish_if_done(self);
  pin_buckets(self);
}

// Tells the meter what this batch did: keys by status, bytes handed out, time taken.
void report(const batch_state& st) {
  if (!st.context.meter) return;
  const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(
    std::chrono::steady_clock::now() - st.asked);
  io_report r = st.copies;
  r.keys.assign(key_error_count, 0);
  r.ns = static_cast<std::uint64_t>(took.count());
  for (const auto& item : st.reply.items) {
    ++r.keys[static_cast<std::size_t>(item.status.error)];
    if (item.status.ok()) r.bytes += item.size;
  }
  caf::anon_send(st.context.meter, std::move(r));
}

// Not before the catalog answered: until then no key has a plan, and a reader's death
// (which comes here) would answer every key "ok" with no bytes.
void finish_if_done(batch_pointer self) {
  auto& st = self->state;
  if (!st.resolved || st.open_reads != 0 || st.pins_missing != 0 || !st.promise.pending())
    return;
  for (const auto& b : st.buckets)
    if (b.file.fd >= 0)
      self->send(b.reads.bucket, unpin_atom_v, static_cast<std::uint32_t>(b.reads.records.size()));
  for (auto lease : st.reply.leases) self->send(st.context.arena, ready_atom_v, lease, st.holder);
  report(st);
  if (std::find(st.sent.begin(), st.sent.end(), true) != st.sent.end())
    st.promise.deliver(take_finished(st));  // waves went out: only the rest
  else
    st.promise.deliver(std::move(st.reply));
  if (!st.alloc_pending) self->quit();  // else on_grant gives the late extents back
}

// A reader that died took its reads with it: they go to the others.
void on_reader_down(batch_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  std::uint32_t dead = no_reader;
  for (std::uint32_t r = 0; r < st.context.readers.size(); ++r)
    if (st.context.readers[r].address() == msg.source) dead = r;
  if (dead == no_reader) return;
  st.reader_alive[dead] = false;
  std::vector<std::uint32_t> orphans;
  for (std::uint32_t i = 0; i < st.plans.size(); ++i)
    if (st.plans[i].reader == dead && !st.plans[i].done) orphans.push_back(i);
  spdlog::warn("batch: a reader died with {} reads of ours; they go to the others",
               orphans.size());
  dispatch(self, orphans);
  go_on(self);
}

batch_actor::behavior_type batch(batch_pointer self, batch_context context) {
  auto& st = self->state;
  st.context = std::move(context);
  st.reader_bytes.assign(st.context.readers.size(), 0);
  st.reader_alive.assign(st.context.readers.size(), true);
  for (const auto& r : st.context.readers) self->monitor(r);
  self->set_down_handler([self](caf::down_msg& msg) { on_reader_down(self, msg); });
  return {
    [self](caf::get_atom, std::vector<std::string>& keys) {
      auto& st = self->state;
      st.asked = std::chrono::steady_clock::now();
      st.keys = std::move(keys);
      st.holder = caf::actor_cast<caf::actor>(self->current_sender());  // delegated to us
      st.reply.items.resize(st.keys.size());
      st.sent.assign(st.keys.size(), false);
      st.promise = self->make_response_promise<get_reply>();
      self->delayed_send(self, timeout_of(self), caf::timeout_atom_v);
      self->request(st.context.catalog, timeout_of(self), caf::resolve_atom_v, st.keys)
        .then([self](resolve_reply& where) { on_resolved(self, where); },
              [self](caf::error&) {
                self->state.resolved = true;
                for (auto& item : self->state.reply.items)
                  item.status = {key_error::unavailable, 0};
                finish_if_done(self);
              });
      return st.promise;
    },
    [self](read_done_atom, const read_results& results) { on_read_done(self, results); },
    [self](caf::timeout_atom) {
      auto& st = self->state;
      for (auto& p : st.plans)
        if (!p.placed && !p.done) st.settle(p, {key_error::timeout, 0});
      finish_if_done(self);
      if (st.promise.pending()) hand_over_finished(self);
    },
  };
}

}  // namespace

batch_actor spawn_batch(caf::actor_system& system, batch_context context) {
  return system.spawn(batch, std::move(context));
}

}  // namespace spillway
