// The read path's protocols (DESIGN.md "BatchGet, the hot path"): the arena lends
// extents, the registrar hands each reader the arena's registered buffers, readers
// keep a sliding window of reads in flight, and a batch actor per get puts it together.
// Extents and read items carry addresses in this process: these messages are local.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "runtime/storage/key_status.hpp"
#include "messages/stats.hpp"
#include "messages/type_ids.hpp"
#include "runtime/io/extent_allocator.hpp"
#include "runtime/io/read_item.hpp"

namespace spillway {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, arena_extent& x) {
  return f(x.chunk, x.offset, x.size);
}

// -- the reader ------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_item& x) {
  return f(x.tag, x.fd, x.offset, x.length, x.address, x.chunk, x.fault, x.companion);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_target& x) {
  return f(x.address, x.capacity, x.slot);
}

// What became of reads: `result` is the bytes read (== length) or -errno.
struct read_result {
  std::uint32_t tag = 0;
  std::int32_t result = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_result& x) {
  return f(x.tag, x.result);
}

using read_results = std::vector<read_result>;

// A batch's side of the conversation: readers answer with results, a few at a time.
using read_client = caf::typed_actor<caf::reacts_to<read_done_atom, read_results>>;

// The registrar's turn for one reader: clone the buffer table of `source_ring_fd`
// (where the kernel can), else register `chunks` (address, size pairs, slot = index)
// on the reader's own ring. Answered with the errno of the failure, 0 for success.
struct buffer_table {
  std::int32_t source_ring_fd = -1;
  std::vector<std::uint64_t> addresses;  // per slot; 0 = empty (a chunk not ready yet)
  std::vector<std::uint64_t> sizes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_table& x) {
  return f(x.source_ring_fd, x.addresses, x.sizes);
}

// fence: answered with the reader's index once every read it was sent before the fence
// has completed or been dropped, so that no kernel read of those items can still write
// to their extents.
using reader_actor = caf::typed_actor<
  caf::replies_to<stats_atom>::with<reader_stats>,
  caf::reacts_to<read_atom, read_client, std::vector<read_item>>,
  caf::replies_to<adopt_atom, buffer_table>::with<std::int32_t>,
  caf::replies_to<fence_atom>::with<std::uint32_t>>;

// -- the registrar ---------------------------------------------------------------

// The table has a slot per arena chunk, then read.memory_slots slots for caller memory
// (node::register_memory), pieces of at most 1 GiB each.
// add(slot, address, size): memory is ready (a populated chunk, caller memory); register it.
// delete(slot): empty the slot; answered once no reader's table holds it any more, so
// that the caller may unmap the memory.
// join(reader): a reader (new, restarted or reset) needs the table.
// fence: answered, with how many readers answered theirs, once every reader it knows
// has passed a fence (a reader gone in the meantime drained its ring before it went):
// no read sent before can still write to the arena.
using registrar_actor = caf::typed_actor<
  caf::reacts_to<caf::add_atom, std::uint32_t, std::uint64_t, std::uint64_t>,
  caf::replies_to<caf::delete_atom, std::uint32_t>::with<caf::ok_atom>,
  caf::reacts_to<caf::join_atom, reader_actor>,
  caf::replies_to<fence_atom>::with<std::uint32_t>>;

// -- the arena -------------------------------------------------------------------

// Extents for the first `extents.size()` of the sizes asked for; the rest did not fit
// and may be asked for again once leases come back.
struct arena_grant {
  std::uint64_t lease = 0;
  std::vector<arena_extent> extents;
  std::vector<std::uint64_t> chunk_addresses;  // base address of every chunk
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, arena_grant& x) {
  return f(x.lease, x.extents, x.chunk_addresses);
}

// alloc(sizes, whole): whole = false: answered when at least one fits (it waits for
// space otherwise); a caller that copies out in waves asks this way. whole = true:
// answered when all of them fit at once, so that two callers who must hold all their
// values together never each hold a part and wait for the other; sizes that would not
// fit even an empty arena are left out (the grant covers the longest prefix that does).
// The batch that asked holds a lease from its grant until ready; a batch that goes
// away before (it died mid-read) has its leases back only after a fence of every
// reader (the registrar's), since reads into them may still be in flight.
// ready(lease, holder): the data is in and `holder` (the batch's caller) may read it
// until it releases the lease or goes away (monitored). A holder in another process
// can vanish without a word, so its lease also expires after read.lease_ms.
// release(lease): the extents come back; a late or repeated release is harmless.
// tick: populate the next step; timeout(lease): the arena's own lease clock.
using arena_actor = caf::typed_actor<
  caf::replies_to<alloc_atom, std::vector<std::uint64_t>, bool>::with<arena_grant>,
  caf::reacts_to<ready_atom, std::uint64_t, caf::actor>,
  caf::reacts_to<release_atom, std::uint64_t>,
  caf::replies_to<stats_atom>::with<arena_stats>,
  caf::reacts_to<caf::tick_atom>,
  caf::reacts_to<caf::timeout_atom, std::uint64_t>>;

// -- a batch get -----------------------------------------------------------------

// One key's outcome: on success its value is `size` bytes at `address` in the arena,
// valid until the lease is released or expires.
struct get_item {
  key_status status;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

// get(keys): one reply, one item per key, once every key's value is read and checked.
// read_done: results from the readers; timeout: the batch's own deadline.
struct get_reply;
using batch_actor = caf::typed_actor<
  caf::replies_to<caf::get_atom, std::vector<std::string>>::with<get_reply>,
  caf::reacts_to<read_done_atom, read_results>,
  caf::reacts_to<caf::timeout_atom>>;

// Also a wave: a batch that its caller lets copy out and release as it goes (the copying
// calls) sends its finished keys in waves when the arena is too small for all at once.
struct get_reply {
  std::vector<std::uint64_t> leases;    // release each once the values are used
  std::vector<get_item> items;
  std::vector<std::uint32_t> positions; // the keys items[i] are for; empty: all, in order
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_item& x) {
  return f(x.status, x.address, x.size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_reply& x) {
  return f(x.leases, x.items, x.positions);
}

}  // namespace spillway
