// Caller memory a node reads into (node::register_memory): the registered-buffer slots
// that hold each region. A region is cut into pieces of at most 1 GiB, the largest
// buffer io_uring registers, each in a slot of its own after the arena's chunks. Not
// thread-safe: the node locks around it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace spillway {

class memory_regions {
public:
  static constexpr std::uint64_t piece_max = 1ull << 30;

  struct piece {
    std::uint32_t slot = 0;
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    bool operator==(const piece&) const = default;
  };

  // Slots [first_slot, first_slot + slots) are this table's.
  memory_regions(std::uint32_t first_slot, std::uint32_t slots);

  // The pieces of [base, base + length), to register. Throws std::invalid_argument for
  // an empty or wrapping range or one that overlaps a region, and std::length_error when
  // too few slots are free (it says how many there are: read.memory_slots).
  std::vector<piece> add(std::uint64_t base, std::uint64_t length);

  // Forgets the region that starts at `base` and returns its pieces, whose slots the
  // caller must have emptied before their memory goes. Throws std::invalid_argument
  // when no region starts there.
  std::vector<piece> remove(std::uint64_t base);

  // The slot whose piece holds [address, address + length) whole; none when the range
  // is not registered or crosses from one piece to the next.
  std::optional<std::uint32_t> slot_of(std::uint64_t address, std::uint64_t length) const;

  std::uint64_t registered_bytes() const;

private:
  struct region {
    std::uint64_t base = 0;
    std::uint64_t length = 0;
    std::vector<piece> pieces;
  };

  std::uint32_t first_slot_;
  std::vector<bool> used_;  // per slot
  std::vector<region> regions_;
};

}  // namespace spillway
