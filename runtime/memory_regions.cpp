#include "runtime/memory_regions.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace spillway {

memory_regions::memory_regions(std::uint32_t first_slot, std::uint32_t slots)
    : first_slot_(first_slot), used_(slots, false) {}

std::vector<memory_regions::piece> memory_regions::add(std::uint64_t base, std::uint64_t length) {
  if (base == 0 || length == 0)
    throw std::invalid_argument("register_memory: an empty region (base " + std::to_string(base) +
                                ", length " + std::to_string(length) + ")");
  if (base + length < base)
    throw std::invalid_argument("register_memory: the region wraps past the end of memory");
  for (const auto& r : regions_)
    if (base < r.base + r.length && r.base < base + length)
      throw std::invalid_argument("register_memory: the region overlaps one registered at " +
                                  std::to_string(r.base));
  const auto count = (length + piece_max - 1) / piece_max;
  const auto free_slots = static_cast<std::uint64_t>(std::count(used_.begin(), used_.end(), false));
  if (count > free_slots)
    throw std::length_error("register_memory: " + std::to_string(length) + " bytes need " +
                            std::to_string(count) + " registered buffers of at most 1 GiB; " +
                            std::to_string(free_slots) + " of read.memory_slots = " +
                            std::to_string(used_.size()) + " are free");
  region r{base, length, {}};
  std::uint32_t next = 0;
  for (std::uint64_t at = 0; at < length; at += piece_max) {
    while (used_[next]) ++next;
    used_[next] = true;
    r.pieces.push_back({first_slot_ + next, base + at, std::min(piece_max, length - at)});
  }
  regions_.push_back(r);
  return r.pieces;
}

std::vector<memory_regions::piece> memory_regions::remove(std::uint64_t base) {
  const auto at = std::find_if(regions_.begin(), regions_.end(),
                               [base](const region& r) { return r.base == base; });
  if (at == regions_.end())
    throw std::invalid_argument("unregister_memory: no region was registered at " +
                                std::to_string(base));
  auto pieces = std::move(at->pieces);
  regions_.erase(at);
  for (const auto& p : pieces) used_[p.slot - first_slot_] = false;
  return pieces;
}

std::optional<std::uint32_t> memory_regions::slot_of(std::uint64_t address,
                                                     std::uint64_t length) const {
  for (const auto& r : regions_)
    for (const auto& p : r.pieces)
      if (address >= p.address && length <= p.size && address - p.address <= p.size - length)
        return p.slot;
  return std::nullopt;
}

std::uint64_t memory_regions::registered_bytes() const {
  std::uint64_t total = 0;
  for (const auto& r : regions_) total += r.length;
  return total;
}

}  // namespace spillway
