// Faults injected on purpose in front of a read's completion, the same for both read
// engines (io_uring and pread): named per item by the batch, which knows the keys, or
// drawn at the [fault] config's rates.
#pragma once

#include <cerrno>
#include <cstdint>
#include <random>

#include "runtime/io/read_item.hpp"

namespace spillway {

enum read_fault : std::uint8_t {
  no_fault = 0,
  fail_with_eio = 1,
  come_back_short = 2,
  fail_with_einval = 3,  // what a filesystem that takes O_DIRECT opens but not reads says
};

// The errno a fault completes its read with; 0 for faults that are not an error.
constexpr int fault_errno(std::uint8_t fault) {
  return fault == fail_with_eio ? EIO : fault == fail_with_einval ? EINVAL : 0;
}

struct read_fault_rates {
  double eio = 0;
  double short_read = 0;
  double corrupt = 0;  // a byte of the data read is flipped
  double submit_failure = 0;  // the ring fails and is reset
  double submit_refusal = 0;  // the kernel refuses for now (EAGAIN), taking no SQE
  bool fail_reopen = false;   // a reset cannot set the ring up again (ENOMEM)
  std::uint64_t seed = 1;
};

class read_fault_dice {
public:
  explicit read_fault_dice(const read_fault_rates& rates) : rates_(rates), dice_(rates.seed) {}

  // What a read of `item` that had `done` bytes already and now returned `result`
  // (bytes or -errno) reports instead. A shortened read is not shortened again once
  // `retried`, so its retry can finish it.
  int apply(const read_item& item, std::uint64_t done, int result, bool retried);

  // What this ring submit answers instead of reaching the kernel (the io_uring engine
  // only): -EIO (a failed ring), -EAGAIN (a refusal), or 0 to reach it.
  int submit_fault();
  bool fail_reopen() const { return rates_.fail_reopen; }

private:
  bool roll(double rate);

  read_fault_rates rates_;
  std::mt19937_64 dice_;
};

}  // namespace spillway
