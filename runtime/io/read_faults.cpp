#include "runtime/io/read_faults.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t page = 4096;

}  // namespace

bool read_fault_dice::roll(double rate) {
  std::uniform_real_distribution<double> dice{0, 1};
  return rate > 0 && dice(dice_) < rate;
}

int read_fault_dice::apply(const read_item& item, std::uint64_t done, int result, bool retried) {
  if (result < 0) return result;
  if (const int err = fault_errno(item.fault)) return -err;
  if (roll(rates_.eio)) return -EIO;
  if (result > 0 && roll(rates_.corrupt))
    reinterpret_cast<std::uint8_t*>(item.address + done)[result / 2] ^= 0x20;
  const bool shorten = item.fault == come_back_short || roll(rates_.short_read);
  if (shorten && !retried) return static_cast<int>(result / 2 / page * page);
  return result;
}

int read_fault_dice::submit_fault() {
  if (roll(rates_.submit_failure)) return -EIO;
  return roll(rates_.submit_refusal) ? -EAGAIN : 0;
}

}  // namespace spillway
