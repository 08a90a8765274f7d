// The chaos soak's schedule (`spillway soak`): the operations and faults to run, in
// order, a pure function of the seed. Nothing an operation answers feeds back into what
// comes next, so a seed replays the same schedule however the node fared or how fast it
// ran; each operation's log line (describe) holds its parameters, never its outcome.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace spillway::soak {

// Keys are "soak-<index>" of a small keyspace, so puts overwrite and gets find them.
constexpr std::uint32_t keyspace = 160;
std::string key_name(std::uint32_t index);

enum class op_kind {
  start,          // the first node, with the dice of its epoch
  put,            // node::put
  put_from,       // node::put_from, from page-aligned caller memory
  get_view,       // node::get_batch, checked and released at once
  get_into_registered,  // node::get_batch_into, into memory given to register_memory
  get_into_plain,       // node::get_batch_into, into memory the node never saw
  hold_view,      // node::get_batch kept (its arena extents lent) across later operations
  release_view,   // the oldest held view checked again, then released
  get_during_put, // a get_batch on another thread while a put forces evictions
  remove,
  flush,
  fs_fault,       // a fault filesystem rule set (it stays until fs_clear)
  fs_clear,       // every rule gone, then a batch that must be clean
  restart,        // held views released, rules cleared, the node stopped and reopened
  transfer,       // bytes written to a transfer-peer process's segment over tcp, read back
  peer_restart,   // the transfer-peer stopped (or found dead) and started with new dice
};

// The fault filesystem's families; each is one rule (tools/faultfs/rules.hpp).
enum class fs_family { read_eio, read_short, read_delay, write_enospc, sync_eio, direct_einval };

// The `[fault]` dice of one node's life: set when it starts, they hold until it stops.
struct epoch_dice {
  std::uint64_t seed = 1;
  double ring_submit_failure_rate = 0;      // ring failures: drain, reset, resubmit
  std::uint64_t reader_throw_after_reads = 0;  // reader kills: its items go elsewhere
  bool fail_registration = false;           // registration failures: plain reads
  double read_error_rate = 0;               // EIO after a good completion
  double corrupt_rate = 0;                  // a byte flipped after a good completion
};

// The transfer-peer's `[fault]` dice (its tcp server's), for the life of one process.
struct peer_dice {
  std::uint64_t drop_lane_after_slices = 0;  // lane drops: slices retried on the others
  std::uint64_t kill_after_slices = 0;       // peer kills: SIGKILL, requests fail fast
};

// The transfer-peer's segment: each transfer lands somewhere in it.
constexpr std::uint64_t peer_segment_bytes = 64 << 20;

struct op {
  std::uint64_t index = 0;
  op_kind kind = op_kind::start;
  std::vector<std::uint32_t> keys;   // into the keyspace
  std::vector<std::uint32_t> sizes;  // put, put_from, get_during_put: bytes per key
  std::vector<std::uint32_t> read_keys;  // get_during_put: the keys read meanwhile
  fs_family family = fs_family::read_eio;  // fs_fault
  std::string rule;                        // fs_fault: the rule's words
  epoch_dice dice;                         // start, restart
  std::uint64_t offset = 0;                // transfer: into the segment; sizes = {length}
  peer_dice peer;                          // start, peer_restart
};

// "op 7 put keys=3,41 sizes=4096,70001": the whole of the operation, nothing timed.
std::string describe(const op& o);
const char* name_of(fs_family family);

class schedule {
public:
  explicit schedule(std::uint64_t seed);
  op next();  // the first is `start`

private:
  std::uint64_t draw(std::uint64_t bound);  // uniform enough in [0, bound)
  bool coin(unsigned percent);
  std::vector<std::uint32_t> some_keys(std::uint32_t most);
  std::vector<std::uint32_t> sizes_for(std::size_t count);
  epoch_dice dice();
  peer_dice peer_faults();
  void fill_fs_fault(op& o);
  op_kind pick_kind();

  // std::mt19937_64's output is fixed by the standard, unlike its distributions:
  // draw() reduces it itself, so a seed gives one schedule on every library.
  std::mt19937_64 prng_;
  std::uint64_t index_ = 0;
  std::uint32_t views_held_ = 0;
};

}  // namespace spillway::soak
