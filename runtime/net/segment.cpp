#include "runtime/net/segment.hpp"

#include <mutex>

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

segment_descriptor segment_table::add(std::byte* base, std::uint64_t length,
                                      std::uint32_t rkey) {
  std::unique_lock lock{mutex_};
  segment_descriptor d{segments_.size() + 1, reinterpret_cast<std::uint64_t>(base), length, rkey};
  segments_.push_back(d);
  return d;
}

std::vector<segment_descriptor> segment_table::list() const {
  std::shared_lock lock{mutex_};
  return segments_;
}

const segment_descriptor* segment_table::find(std::uint64_t id) const {
  if (id == 0 || id > segments_.size()) return nullptr;
  return &segments_[id - 1];
}

transfer_error segment_table::resolve(std::uint64_t id, std::uint64_t offset,
                                      std::uint64_t length, std::byte*& where) const {
  std::shared_lock lock{mutex_};
  const auto* segment = find(id);
  const auto error = check_bounds(segment, offset, length);
  if (error == transfer_error::none) where = reinterpret_cast<std::byte*>(segment->base) + offset;
  return error;
}

}  // namespace spillway
