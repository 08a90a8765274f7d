// State chart:  populating (chunk by chunk, 2 MiB a step, serving in between) --> ready
//   lease:  granted (held by its batch) --ready(caller)--> held by the caller
//           --release | holder down | expiry--> free
//   A batch gone before ready may have reads in flight into its lease: it is free
//   only after a fence of every reader (the registrar's).
//   Only a holder in another process has the lease_ms clock: one here is an actor of
//   this process that releases, or is seen going down; its views are never lent again
//   while it can read them.
// An alloc that finds no room waits, in order, until a release or expiry makes room; a
// whole alloc (a view batch's) waits until all of it fits at once.
#include "actors/arena.hpp"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/holder_counts.hpp"
#include "runtime/io/arena_memory.hpp"

namespace spillway {
namespace {

// 2 MiB a step, a huge page of the usual size. Populating holds the process's mmap lock while the kernel
// zeroes the pages, and every other thread that needs the lock (malloc growing the
// heap, a new thread's stack) waits for the step: with 64 MiB steps the catalog took
// 0.75 s instead of 20 ms to load 32 768 keys at start, and the first batch waited.
constexpr std::uint64_t populate_step = 2u << 20;

struct lease {
  std::vector<arena_extent> runs;
  caf::actor_addr holder;  // the batch that asked, then (ready) its caller
  bool ready = false;      // no read into it is in flight any more
};

struct waiting_alloc {
  caf::typed_response_promise<arena_grant> promise;
  std::vector<std::uint64_t> sizes;
  bool whole = false;
  caf::actor_addr requester;
};

struct arena_state {
  read_section config;
  registrar_actor registrar;
  std::shared_ptr<arena_memory> memory;
  extent_allocator allocator;
  std::uint32_t populating = 0;  // next chunk to populate
  std::unordered_map<std::uint64_t, lease> leases;
  std::uint64_t next_lease = 1;
  std::uint64_t expired = 0;
  std::uint64_t abandoned = 0;
  holder_counts holders;  // leases held, by holder
  std::deque<waiting_alloc> waiting;
  std::vector<std::uint64_t> chunk_addresses;
  static inline const char* name = "arena";

  // How many of `sizes`, in order, an empty arena could hold at once: a whole alloc
  // waits for those and gives up the rest, which would otherwise wait forever.
  std::size_t fit_when_empty(const std::vector<std::uint64_t>& sizes) const {
    extent_allocator empty;
    for (std::uint32_t c = 0; c < memory->chunk_count(); ++c)
      empty.add(c, 0, memory->chunk_size(c));
    std::vector<arena_extent> extents, runs;
    return empty.allocate(sizes, extents, runs);
  }
};

using arena_pointer = arena_actor::stateful_pointer<arena_state>;

// Extents for as many sizes as fit now (all of them when `whole`), held by
// `requester` until it hands them over; or nullopt.
std::optional<arena_grant> try_grant(arena_pointer self, const std::vector<std::uint64_t>& sizes,
                                     bool whole, const caf::actor_addr& requester) {
  auto& st = self->state;
  arena_grant grant;
  lease l;
  const auto placed = st.allocator.allocate(sizes, grant.extents, l.runs);
  if (placed == 0 || (whole && placed < sizes.size())) {
    st.allocator.release(l.runs);
    return std::nullopt;
  }
  grant.lease = st.next_lease++;
  grant.chunk_addresses = st.chunk_addresses;
  l.holder = requester;
  st.leases.emplace(grant.lease, std::move(l));
  if (requester) st.holders.add(self, requester, 1);
  return grant;
}

// Serves waiting allocs in order while they fit.
void serve_waiting(arena_pointer self) {
  auto& waiting = self->state.waiting;
  while (!waiting.empty()) {
    auto& next = waiting.front();
    auto grant = try_grant(self, next.sizes, next.whole, next.requester);
    if (!grant) return;
    next.promise.deliver(std::move(*grant));
    waiting.pop_front();
  }
}

void give_back(arena_pointer self, std::uint64_t id) {
  auto& st = self->state;
  auto it = st.leases.find(id);
  if (it == st.leases.end()) return;  // released twice, or expired first: harmless
  const auto holder = it->second.holder;
  st.allocator.release(it->second.runs);
  st.leases.erase(it);
  st.holders.remove(self, holder, 1);
  serve_waiting(self);
}

// The batch's caller reads the lease's memory from now on; it is watched until it
// lets go.
void hand_over(arena_pointer self, std::uint64_t id, const caf::actor& holder) {
  auto& st = self->state;
  auto it = st.leases.find(id);
  if (it == st.leases.end() || it->second.ready) return;
  st.holders.remove(self, std::exchange(it->second.holder, holder.address()), 1);
  it->second.ready = true;
  if (!holder) return give_back(self, id);  // the reply goes nowhere: no one can read it
  st.holders.add(self, holder.address(), 1);
  if (holder.node() != self->node())
    self->delayed_send(self, std::chrono::milliseconds{st.config.lease_ms}, caf::timeout_atom_v,
                       id);
}

// A holder that went away (a caller that returned, a peer whose connection dropped)
// can read nothing any more: its leases come back. A batch that went before its
// leases were ready may have left reads in flight into them: those come back once
// every reader has passed a fence.
void on_holder_down(arena_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  std::vector<std::uint64_t> ready, reading;
  for (const auto& [id, l] : st.leases)
    if (l.holder == msg.source) (l.ready ? ready : reading).push_back(id);
  st.abandoned += ready.size() + reading.size();
  for (auto id : ready) give_back(self, id);
  if (reading.empty()) return;
  spdlog::warn("arena: a batch went away mid-read; its {} leases come back after a fence "
               "of the readers", reading.size());
  self->request(st.registrar, caf::infinite, fence_atom_v)
    .then([self, reading](std::uint32_t) {
            for (auto id : reading) give_back(self, id);
          },
          [](caf::error&) {});  // no registrar: the node stops, nothing is lent again
}

// Each populated step is lent out at once (the first batch waits for one step, not for
// a chunk); a chunk goes to the registrar once it is whole.
void populate_step_of(arena_pointer self) {
  auto& st = self->state;
  const auto chunk = st.populating;
  const auto address = reinterpret_cast<std::uint64_t>(st.memory->chunk_base(chunk));
  st.chunk_addresses[chunk] = address;
  const auto [offset, size] = st.memory->populate(chunk, populate_step);
  st.allocator.add(chunk, offset, size);
  serve_waiting(self);
  const auto chunk_size = st.memory->chunk_size(chunk);
  if (st.memory->populated(chunk) < chunk_size) return self->send(self, caf::tick_atom_v);
  self->send(st.registrar, caf::add_atom_v, chunk, address, chunk_size);
  if (++st.populating < st.memory->chunk_count()) self->send(self, caf::tick_atom_v);
  else spdlog::info("arena: {} MiB populated ({} pages)", st.memory->size() >> 20,
                    to_string(st.memory->pages()));
}

arena_actor::behavior_type arena(arena_pointer self, read_section config,
                                 registrar_actor registrar,
                                 std::shared_ptr<arena_memory> memory) {
  auto& st = self->state;
  st.config = std::move(config);
  st.registrar = std::move(registrar);
  st.memory = std::move(memory);
  st.chunk_addresses.assign(st.memory->chunk_count(), 0);
  self->set_down_handler([self](caf::down_msg& msg) { on_holder_down(self, msg); });
  self->send(self, caf::tick_atom_v);
  return {
    [self](alloc_atom, std::vector<std::uint64_t>& sizes,
           bool whole) -> caf::result<arena_grant> {
      auto& st = self->state;
      const auto requester = caf::actor_cast<caf::actor_addr>(self->current_sender());
      if (st.waiting.empty())
        if (auto grant = try_grant(self, sizes, whole, requester)) return std::move(*grant);
      if (whole) {
        sizes.resize(st.fit_when_empty(sizes));  // the rest would wait forever
        if (sizes.empty()) return arena_grant{};
      }
      auto promise = self->make_response_promise<arena_grant>();
      st.waiting.push_back({promise, std::move(sizes), whole, requester});
      serve_waiting(self);  // what is left of a whole alloc may fit now
      return promise;
    },
    [self](ready_atom, std::uint64_t id, caf::actor& holder) { hand_over(self, id, holder); },
    [self](release_atom, std::uint64_t id) { give_back(self, id); },
    [self](caf::timeout_atom, std::uint64_t id) {
      auto& st = self->state;
      if (!st.leases.count(id)) return;
      spdlog::warn("arena: lease {} expired after {} ms; its extents are reclaimed", id,
                   st.config.lease_ms);
      ++st.expired;
      give_back(self, id);
    },
    [self](caf::tick_atom) { populate_step_of(self); },
    [self](stats_atom) {
      const auto& st = self->state;
      return arena_stats{st.memory->size(),       st.allocator.total_bytes(),
                         st.allocator.free_bytes(), st.leases.size(),
                         st.waiting.size(),         st.expired,
                         st.abandoned,              st.memory->huge_bytes(),
                         to_string(st.memory->pages())};
    },
  };
}

}  // namespace

arena_actor spawn_arena(caf::actor_system& system, const read_section& config,
                        registrar_actor registrar) {
  // Mapped here, so that a failure is the caller's exception, not a dead actor.
  auto memory = std::make_shared<arena_memory>(config.arena_size, config.arena_chunk,
                                               config.arena_pages);
  if (memory->pages() == arena_pages::plain)
    spdlog::warn("arena: plain 4 KiB pages: reads run at 0.36-0.6 of the drive; give the "
                 "hugetlb pool room (vm.nr_hugepages) or enable THP");
  return system.spawn<caf::detached>(arena, config, std::move(registrar), std::move(memory));
}

}  // namespace spillway
