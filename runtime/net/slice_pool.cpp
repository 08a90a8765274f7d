#include "runtime/net/slice_pool.hpp"

#include <cassert>

namespace spillway {

slice_pool::slice_pool(std::size_t groups, std::size_t watermark)
    : slices_(std::make_unique<slice[]>(groups * watermark)),
      groups_(std::make_unique<slice_group[]>(groups)) {
  free_.reserve(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    auto& group = groups_[g];
    group.items.reserve(watermark);
    group.limit = watermark;
    group.storage = slices_.get() + g * watermark;
    group.pooled = true;
    free_.push_back(&group);
  }
}

slice_group* slice_pool::take() {
  if (free_.empty()) return nullptr;
  auto* group = free_.back();
  free_.pop_back();
  return group;
}

void slice_pool::give_back(slice_group* group) {
  assert(group->pooled && free_.size() < free_.capacity());
  group->items.clear();  // keeps the capacity: the next fill allocates nothing
  group->started = slice_group::not_started;
  free_.push_back(group);
}

}  // namespace spillway
