// A slicer's slices, allocated once at startup and reused: no heap allocation per
// slice on the hot path. Slices travel in groups of up to `watermark`; a group is what
// a slicer hands a transport in one message and what comes back, each slice with its
// status. The naive contender allocates its groups and slices one by one instead
// (`pooled` false), as the code the seed PR replaced did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/net/slice.hpp"

namespace spillway {

struct slice_group {
  std::vector<slice*> items;  // capacity `limit`, reserved once
  std::size_t limit = 0;      // the watermark: a full group is posted at once
  slice* storage = nullptr;   // pooled: this group's own `watermark` slices
  bool pooled = false;
  std::uint64_t batch = 0;    // the slicer's batch every slice of the group belongs to
  std::uint32_t lane = 0;     // index of the lane it was last posted to
  // Set by the transport when it starts the first slice: "on the wire" for the bench.
  // A group comes back without it when no transport started it (the peer unreachable,
  // no lane left), and a pooled one must not keep an earlier batch's.
  static constexpr auto not_started = transfer_clock::time_point::max();
  transfer_clock::time_point started = not_started;

  // The next slice of a pooled group; the caller checks full() first.
  slice& append() {
    items.push_back(storage + items.size());
    return *items.back();
  }
  bool full() const { return items.size() == limit; }
};

class slice_pool {
public:
  slice_pool(std::size_t groups, std::size_t watermark);
  slice_pool(const slice_pool&) = delete;
  slice_pool& operator=(const slice_pool&) = delete;

  // An empty group, or nullptr when all are lent out.
  slice_group* take();
  void give_back(slice_group* group);
  std::size_t available() const { return free_.size(); }

private:
  std::unique_ptr<slice[]> slices_;
  std::unique_ptr<slice_group[]> groups_;
  std::vector<slice_group*> free_;
};

}  // namespace spillway
