// One reader's io_uring and its sliding window: up to `window` reads in flight, and
// one more submitted each time one completes, whatever batch it belongs to. A read also
// waits while `window_bytes` are in flight (one always goes): the disk is busy with a
// few MiB, and 32 reads of 1.8 MiB all in flight finish together, so a batch's first
// values came back only once most of the window had (a get_into's first piece at
// ~90 ms instead of ~15, with its sends idle meanwhile). A companion
// read (read_item.hpp: a value's last page, beside its pages read in place) takes a slot
// of its own outside the window, so a value read in place keeps as many bytes in flight
// as one read into the arena; there are `window` such slots more. Reads go
// through read_fixed where their target lies in a registered arena chunk, else through
// plain reads. The ring also keeps a read posted on the owner's wakeup eventfd, so one
// wait covers both I/O and new mail (STACK.md 2.8). Nothing here allocates per read:
// the window's slots and the queue are sized up front and reused.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <liburing.h>

#include "runtime/io/read_faults.hpp"

namespace spillway {

class read_ring {
public:
  // The owner's callback for a finished read: its client, its tag, and the bytes read
  // (== length) or -errno.
  using done_fn = std::function<void(std::uint32_t client, std::uint32_t tag, int result)>;

  // A read waiting for a slot. Reads are numbered in the order they are enqueued.
  struct queued_read {
    read_item item;
    std::uint32_t client = 0;
    std::uint64_t number = 0;
  };

  read_ring(unsigned window, std::uint64_t window_bytes, int wakeup_fd, read_fault_rates faults,
            done_fn done);
  ~read_ring();
  read_ring(const read_ring&) = delete;
  read_ring& operator=(const read_ring&) = delete;

  // Sets the ring up in the calling thread (SINGLE_ISSUER|DEFER_TASKRUN where the kernel
  // takes them). Returns 0 or -errno.
  int open();
  bool is_open() const { return open_; }
  unsigned flags() const { return flags_; }

  void enqueue(const read_item& item, std::uint32_t client);
  // How many reads were enqueued so far: the next one gets this number.
  std::uint64_t enqueued() const { return enqueued_; }
  // Reads submitted and not completed yet, companions included.
  std::size_t in_flight() const { return in_flight_; }
  // The number of the oldest read not completed yet; enqueued() when none is left.
  std::uint64_t oldest_unfinished() const;

  // Fills the window, waits for a completion or the wakeup, handles what came back.
  // Returns true when the wakeup fired. A failed submit resets the ring (see reset);
  // when that fails too, the ring is closed (is_open() is false, reset_errno() says why)
  // and the reads it had not finished wait in take_queued().
  bool run_once();

  // Waits for every read in flight; their results go to the callback. 0, or the -errno
  // that the kernel kept answering (see wait_failures_max): then reads may be left to it.
  int drain();

  // Takes the buffer table: clones `source_ring_fd`'s when the kernel can, else
  // registers the buffers at `addresses` (0 = an empty slot) on this ring. 0 or -errno;
  // after a failure no read uses read_fixed until a later call succeeds.
  int adopt(int source_ring_fd, const std::vector<std::uint64_t>& addresses,
            const std::vector<std::uint64_t>& sizes);

  // Drains, tears down and sets up the ring again; the registered table is gone, so
  // the owner must ask for it again. Queued and unsubmitted reads stay queued. 0, or the
  // -errno of the set-up that failed (the ring stays closed) or of the wait that gave up.
  int reset();
  int reset_errno() const { return reset_errno_; }

  // A closed ring's reads not yet finished, with their clients, in order; the queue is
  // left empty. Each is owed its callback by whoever takes it.
  std::vector<queued_read> take_queued();

  std::size_t registered_buffers() const;
  std::uint64_t reads_fixed() const { return reads_fixed_; }
  std::uint64_t reads_plain() const { return reads_plain_; }
  std::uint64_t resets() const { return resets_; }
  std::uint64_t short_reads() const { return short_reads_; }  // each resubmitted once
  // Submits the kernel refused for now (EAGAIN, EBUSY) and that were tried again.
  std::uint64_t refused_submits() const { return refused_submits_; }
  // Time spent waiting with reads in flight, and that time weighted by how many.
  std::uint64_t busy_ns() const { return busy_ns_; }
  std::uint64_t in_flight_ns() const { return in_flight_ns_; }

private:
  struct slot {
    queued_read read;
    std::uint64_t done = 0;    // bytes read so far
    bool retried = false;      // a short read was resubmitted once already
    bool submitted = false;    // the kernel has its SQE: it will complete
    bool busy = false;
  };

  void arm_wakeup();
  void queue_sqe(std::uint64_t tag);
  bool reap();
  int submit_and_wait();
  void note_consumed();
  int wait_for_kernel();
  int register_own(const std::vector<std::uint64_t>& addresses,
                   const std::vector<std::uint64_t>& sizes);
  void prepare(std::uint32_t index);
  void fill_window();
  void complete(std::uint32_t index, int result);
  void close();

  io_uring ring_{};
  bool open_ = false;
  unsigned flags_ = 0;
  int wakeup_fd_;
  std::uint64_t wakeup_count_ = 0;
  std::vector<slot> slots_;
  std::vector<std::uint64_t> unconsumed_;  // tags of SQEs the kernel has not taken, in order
  std::vector<std::uint32_t> free_;
  std::vector<queued_read> queue_;  // FIFO from head_
  std::size_t head_ = 0;
  std::uint64_t enqueued_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t window_;
  std::size_t in_window_ = 0;  // reads in flight that are not companions
  std::uint64_t window_bytes_;
  std::uint64_t bytes_in_window_ = 0;  // their lengths
  std::vector<std::uint64_t> registered_;  // per table slot: the address it holds, 0 = none
  bool cloned_ = false;
  bool has_own_table_ = false;
  read_fault_dice faults_;
  done_fn done_;
  std::uint64_t reads_fixed_ = 0, reads_plain_ = 0, resets_ = 0, short_reads_ = 0;
  std::uint64_t refused_submits_ = 0;
  int reset_errno_ = 0;
  std::uint64_t busy_ns_ = 0, in_flight_ns_ = 0;
};

}  // namespace spillway
