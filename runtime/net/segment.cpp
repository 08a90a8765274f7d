#include "runtime/net/segment.hpp"

#include <algorithm>
#include <mutex>
#include <thread>

namespace spillway {

const segment_descriptor* find_segment(const std::vector<segment_descriptor>& segments,
                                       std::uint64_t id) {
  for (const auto& s : segments)
    if (s.id == id) return &s;
  return nullptr;
}

transfer_error check_bounds(const segment_descriptor* segment, std::uint64_t offset,
                            std::uint64_t length) {
  if (segment == nullptr) return transfer_error::unknown_segment;
  std::uint64_t end = 0;
  if (__builtin_add_overflow(offset, length, &end)) return transfer_error::length_overflow;
  if (end > segment->length) return transfer_error::out_of_bounds;
  return transfer_error::none;
}

void segment_use::release() {
  if (users_ != nullptr) users_->fetch_sub(1, std::memory_order_release);
  users_ = nullptr;
}

bool segment_table::entry::reaches(std::string_view peer, bool admitted,
                                   std::string_view owner) const {
  if (withdrawn) return false;
  if (peer == owner) return true;  // "" == "" only in a table without an owner (tests)
  if (peer.empty()) return false;
  if (admitted && exported.any_admitted_peer) return true;
  return std::find(exported.peers.begin(), exported.peers.end(), peer) != exported.peers.end();
}

segment_descriptor segment_table::add(std::byte* base, std::uint64_t length,
                                      segment_export exported, std::uint32_t rkey) {
  std::unique_lock lock{mutex_};
  auto& e = segments_.emplace_back();
  e.descriptor = {segments_.size(), reinterpret_cast<std::uint64_t>(base), length, rkey};
  e.exported = std::move(exported);
  return e.descriptor;
}

bool segment_table::remove(std::uint64_t id) {
  const entry* e = nullptr;
  {
    std::unique_lock lock{mutex_};
    e = find(id);
    if (e == nullptr || e->withdrawn) return false;
    const_cast<entry*>(e)->withdrawn = true;  // under the exclusive lock
  }
  // A move in progress holds the segment for at most one frame (transfer.frame_timeout_ms
  // bounds it on tcp); unregistering is rare, so a short poll is all this needs.
  while (e->users.load(std::memory_order_acquire) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  return true;
}

std::vector<segment_descriptor> segment_table::list() const {
  std::shared_lock lock{mutex_};
  std::vector<segment_descriptor> out;
  for (const auto& e : segments_)
    if (!e.withdrawn) out.push_back(e.descriptor);
  return out;
}

std::vector<segment_descriptor> segment_table::list_for(std::string_view peer, bool admitted,
                                                        bool with_addresses) const {
  std::shared_lock lock{mutex_};
  std::vector<segment_descriptor> out;
  for (const auto& e : segments_) {
    if (!e.reaches(peer, admitted, owner_)) continue;
    auto d = e.descriptor;
    if (!with_addresses) d.base = d.rkey = 0;
    out.push_back(d);
  }
  return out;
}

const segment_table::entry* segment_table::find(std::uint64_t id) const {
  if (id == 0 || id > segments_.size()) return nullptr;
  return &segments_[id - 1];
}

transfer_error segment_table::resolve(std::uint64_t id, std::uint64_t offset,
                                      std::uint64_t length, std::string_view peer,
                                      bool admitted, transfer_op op, std::byte*& where,
                                      segment_use& use) const {
  std::shared_lock lock{mutex_};
  const auto* e = find(id);
  if (e == nullptr) return transfer_error::unknown_segment;
  if (!e->reaches(peer, admitted, owner_)) return transfer_error::not_exported;
  if (op == transfer_op::write && e->exported.access == segment_access::read_only)
    return transfer_error::read_only;
  const auto error = check_bounds(&e->descriptor, offset, length);
  if (error != transfer_error::none) return error;
  where = reinterpret_cast<std::byte*>(e->descriptor.base) + offset;
  use.release();
  e->users.fetch_add(1, std::memory_order_acq_rel);  // under the lock: remove() sees it
  use.users_ = &e->users;
  return error;
}

}  // namespace spillway
