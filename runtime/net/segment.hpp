// Segments: memory a peer may touch. The side that owns the memory registers it here,
// exported to the peers allowed to reach it (their transfer identities), read-only or
// read-write, and checks every slice against it before a byte is read or written: no
// peer reaches outside what was exported to it. Thread-safe: tcp server threads look
// up while the node registers and unregisters.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/net/slice.hpp"

namespace spillway {

// What a peer needs to address a segment: its id and length. `base` (the owner's
// address) and `rkey` (the RDMA memory region's key) are filled in only where the
// transport needs them: in the rdma handshake's answer, for the segments exported to
// that peer. Everywhere else they are 0, so descriptors tell nothing of the owner's
// address space.
struct segment_descriptor {
  std::uint64_t id = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::uint32_t rkey = 0;

  bool operator==(const segment_descriptor&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, segment_descriptor& x) {
  return f(x.id, x.base, x.length, x.rkey);
}

enum class segment_access : std::uint8_t { read_only, read_write };

// Who may reach a segment besides its owner: the transfer identities of `peers`
// (node::transfer_identity() of each), or, with `any_admitted_peer`, every peer the
// owner's control channel admitted (a remote client's memory, which the cluster's
// nodes reach: with TLS on, exactly the peers holding the cluster's certificate).
struct segment_export {
  std::vector<std::string> peers;
  segment_access access = segment_access::read_write;
  bool any_admitted_peer = false;

  static segment_export to(std::vector<std::string> peers,
                           segment_access access = segment_access::read_write) {
    return {std::move(peers), access, false};
  }
  static segment_export to_admitted_peers(segment_access access = segment_access::read_write) {
    return {{}, access, true};
  }
};

// The descriptor of segment `id` among `segments`, or null.
const segment_descriptor* find_segment(const std::vector<segment_descriptor>& segments,
                                       std::uint64_t id);

// The whole bounds check, shared by owners and by slicers holding a peer's descriptors:
// none, unknown_segment (null), length_overflow or out_of_bounds.
transfer_error check_bounds(const segment_descriptor* segment, std::uint64_t offset,
                            std::uint64_t length);

// Holds a segment while its bytes move, so that unregistering it waits for the move to
// end instead of letting the caller free memory a lane still writes. Cheap: one atomic
// increment, no allocation.
class segment_use {
public:
  segment_use() = default;
  ~segment_use() { release(); }
  segment_use(const segment_use&) = delete;
  segment_use& operator=(const segment_use&) = delete;
  void release();

private:
  friend class segment_table;
  std::atomic<std::uint32_t>* users_ = nullptr;
};

class segment_table {
public:
  // `owner`: the owning node's transfer identity, which reaches every segment.
  explicit segment_table(std::string owner = {}) : owner_(std::move(owner)) {}

  // Ids start at 1 and are never reused. By default exported to no peer: the owner's
  // own routes (and, in a table without an owner, every caller) reach it.
  segment_descriptor add(std::byte* base, std::uint64_t length, segment_export exported = {},
                         std::uint32_t rkey = 0);
  // Withdraws segment `id`: later requests on it fail as not_exported. Returns once no
  // lane moves bytes of it any more (a frame in flight ends, or times out), so the
  // caller may free the memory then. False for an id not registered (or withdrawn).
  bool remove(std::uint64_t id);

  // Every live segment, with its base and rkey: for the owner itself.
  std::vector<segment_descriptor> list() const;
  // The live segments exported to `peer`; ids and lengths only unless `with_addresses`.
  std::vector<segment_descriptor> list_for(std::string_view peer, bool admitted,
                                           bool with_addresses) const;

  // The address of [offset, offset + length) in segment `id` for `peer` doing `op`, or
  // the reason there is none: unknown_segment, not_exported, read_only, or a bounds
  // error. `where` and `use` are set only on success; `use` holds the segment until it
  // is released. `admitted`: the peer came through the owner's control channel.
  transfer_error resolve(std::uint64_t id, std::uint64_t offset, std::uint64_t length,
                         std::string_view peer, bool admitted, transfer_op op,
                         std::byte*& where, segment_use& use) const;

  const std::string& owner() const { return owner_; }

private:
  struct entry {
    segment_descriptor descriptor;
    segment_export exported;
    bool withdrawn = false;
    mutable std::atomic<std::uint32_t> users{0};

    bool reaches(std::string_view peer, bool admitted, std::string_view owner) const;
  };

  const entry* find(std::uint64_t id) const;  // caller holds mutex_

  std::string owner_;
  mutable std::shared_mutex mutex_;
  std::deque<entry> segments_;  // by id - 1; a deque keeps each entry's address
};

}  // namespace spillway
