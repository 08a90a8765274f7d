// The loop, in TigerBeetle's order: fill the window, submit and wait, reap a fixed
// batch of completions, act on each. Every errno has a decision: EINTR, EAGAIN and EBUSY
// wait again (only the SQEs the kernel took are in flight), a short read is resubmitted
// once for its remainder, anything else is that read's result; a failed submit resets
// the ring.
#include "runtime/io/read_ring.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <ctime>
#include <sys/uio.h>

namespace spillway {
namespace {

constexpr std::uint64_t wakeup_tag = 0;  // slot i completes with user_data i + 1
constexpr unsigned reap_batch = 64;

// A wait the kernel answers with a transient errno this many times in a row is given up:
// a signal or a moment short of memory does not last a thousand tries.
constexpr unsigned wait_failures_max = 1000;

// Whether the kernel's answer is a failure of the ring, not "not now" (a signal, or no
// memory or CQ space for the moment).
bool ring_failed(int rc) { return rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY; }

std::uint64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

// IORING_REGISTER_CLONE_BUFFERS (6.12+), not in liburing 2.3's headers: STACK.md 5.
constexpr unsigned register_clone_buffers = 30;
constexpr std::uint32_t clone_dst_replace = 1u << 1;  // 6.13+: replace an existing table
struct clone_buffers_arg {
  std::uint32_t src_fd, flags, src_off, dst_off, nr, pad[3];
};

int clone_table(int dst_ring_fd, int src_ring_fd, std::uint32_t flags) {
  clone_buffers_arg arg{static_cast<std::uint32_t>(src_ring_fd), flags, 0, 0, 0, {}};
  const long rc = ::syscall(__NR_io_uring_register, dst_ring_fd, register_clone_buffers, &arg, 1);
  return rc < 0 ? -errno : 0;
}

}  // namespace

read_ring::read_ring(unsigned window, std::uint64_t window_bytes, int wakeup_fd,
                     read_fault_rates faults, done_fn done)
    : wakeup_fd_(wakeup_fd), slots_(2 * window), window_(window), window_bytes_(window_bytes),
      faults_(faults), done_(std::move(done)) {
  for (auto i = static_cast<std::uint32_t>(slots_.size()); i-- > 0;) free_.push_back(i);
  unconsumed_.reserve(slots_.size() + 1);
  queue_.reserve(4 * window);
}

read_ring::~read_ring() { close(); }

int read_ring::open() {
  const unsigned entries = static_cast<unsigned>(slots_.size()) + 1;  // + the wakeup
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(entries, &ring_, &params);
  if (rc == -EINVAL) {  // older than 6.1: a plain ring does the same work
    params = io_uring_params{};
    rc = io_uring_queue_init_params(entries, &ring_, &params);
  }
  if (rc < 0) return rc;
  open_ = true;
  flags_ = params.flags;
  arm_wakeup();
  return 0;
}

void read_ring::close() {
  if (!open_) return;
  drain();
  // Unregistered before exit: a ring torn down with buffers registered keeps hugetlb
  // pages pinned for a while, and the next process fails its mmap (BENCHMARKS.md).
  io_uring_unregister_buffers(&ring_);
  io_uring_queue_exit(&ring_);
  open_ = false;
  unconsumed_.clear();
  cloned_ = false;
  has_own_table_ = false;
  registered_.assign(registered_.size(), 0);
}

void read_ring::arm_wakeup() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // one entry is kept for it
  io_uring_prep_read(sqe, wakeup_fd_, &wakeup_count_, sizeof wakeup_count_, 0);
  io_uring_sqe_set_data64(sqe, wakeup_tag);
  unconsumed_.push_back(wakeup_tag);
}

void read_ring::enqueue(const read_item& item, std::uint32_t client) {
  if (head_ == queue_.size()) {  // empty: start over at the front, keeping the capacity
    queue_.clear();
    head_ = 0;
  }
  queue_.push_back({item, client, enqueued_++});
}

std::uint64_t read_ring::oldest_unfinished() const {
  std::uint64_t oldest = head_ < queue_.size() ? queue_[head_].number : enqueued_;
  for (const auto& s : slots_)
    if (s.busy) oldest = std::min(oldest, s.read.number);
  return oldest;
}

void read_ring::prepare(std::uint32_t index) {
  slot& s = slots_[index];
  const auto& it = s.read.item;
  auto* target = reinterpret_cast<void*>(it.address + s.done);
  const auto length = static_cast<unsigned>(it.length - s.done);
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  assert(sqe != nullptr);  // the ring has an entry per slot
  if (it.chunk < registered_.size() && registered_[it.chunk] != 0) {
    io_uring_prep_read_fixed(sqe, it.fd, target, length, it.offset + s.done,
                             static_cast<int>(it.chunk));
    ++reads_fixed_;
  } else {
    io_uring_prep_read(sqe, it.fd, target, length, it.offset + s.done);
    ++reads_plain_;
  }
  io_uring_sqe_set_data64(sqe, index + 1);
  unconsumed_.push_back(index + 1);
  s.submitted = false;
}

void read_ring::fill_window() {
  while (!free_.empty() && head_ < queue_.size()) {
    const auto& next = queue_[head_].item;
    const bool counted = !next.companion;
    if (counted && (in_window_ == window_ || bytes_in_window_ >= window_bytes_)) return;
    const auto index = free_.back();
    free_.pop_back();
    slots_[index] = slot{queue_[head_], 0, false, false, true};
    ++head_;
    ++in_flight_;
    in_window_ += counted;
    bytes_in_window_ += counted ? next.length : 0;
    prepare(index);
  }
}

void read_ring::complete(std::uint32_t index, int result) {
  slot& s = slots_[index];
  const auto& item = s.read.item;
  result = faults_.apply(item, s.done, result, s.retried);
  if (result >= 0) s.done += static_cast<std::uint64_t>(result);
  if (result >= 0 && s.done < item.length && !s.retried) {
    s.retried = true;  // a short read: once more for the remainder
    ++short_reads_;
    prepare(index);
    return;
  }
  const int outcome = result < 0 ? result : s.done == item.length ? static_cast<int>(s.done)
                                                                   : -EIO;
  s.busy = false;
  --in_flight_;
  in_window_ -= !item.companion;
  bytes_in_window_ -= item.companion ? 0 : item.length;
  free_.push_back(index);
  done_(s.read.client, item.tag, outcome);
}

// Handles what the ring has completed; returns whether the wakeup was among it.
bool read_ring::reap() {
  io_uring_cqe* cqes[reap_batch];
  bool woke = false;
  const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, reap_batch);
  for (unsigned i = 0; i < n; ++i) {
    const auto tag = io_uring_cqe_get_data64(cqes[i]);
    const int res = cqes[i]->res;
    if (tag == wakeup_tag) {
      woke = true;
      continue;
    }
    slots_[tag - 1].submitted = false;
    complete(static_cast<std::uint32_t>(tag - 1), res);
  }
  io_uring_cq_advance(&ring_, n);
  return woke;
}

// The kernel takes SQEs in the order they were queued and leaves the rest in the SQ for
// the next submit, whatever it answered: only what it took will complete.
void read_ring::note_consumed() {
  const unsigned left = io_uring_sq_ready(&ring_);
  assert(left <= unconsumed_.size());
  const auto taken = static_cast<std::ptrdiff_t>(unconsumed_.size() - left);
  for (auto i = unconsumed_.begin(); i != unconsumed_.begin() + taken; ++i)
    if (*i != wakeup_tag) slots_[*i - 1].submitted = true;
  unconsumed_.erase(unconsumed_.begin(), unconsumed_.begin() + taken);
}

// The one place the ring waits, so the window's occupancy is measured here: the time
// outside it is the reader's own work, a few microseconds a loop.
int read_ring::submit_and_wait() {
  const auto start = now_ns();
  const int rc = io_uring_submit_and_wait(&ring_, 1);
  const auto waited = now_ns() - start;
  if (in_flight_ > 0) busy_ns_ += waited;
  in_flight_ns_ += in_flight_ * waited;
  note_consumed();
  return rc;
}

bool read_ring::run_once() {
  assert(open_);
  fill_window();
  int rc = faults_.submit_fault();
  if (rc == 0) rc = submit_and_wait();
  if (ring_failed(rc)) {
    reset_errno_ = -reset();
    return true;  // the owner re-reads its mailbox and asks for the table again
  }
  if (rc == -EAGAIN || rc == -EBUSY) ++refused_submits_;
  const bool woke = reap();
  if (woke) arm_wakeup();
  return woke;
}

int read_ring::drain() {
  for (unsigned failures = 0; in_flight_ > 0;) {
    const int rc = submit_and_wait();
    if (reap()) arm_wakeup();  // reaped whatever it answered: EBUSY may want CQ space
    if (rc >= 0) failures = 0;
    else if (ring_failed(rc) || ++failures == wait_failures_max) return rc;
  }
  return 0;
}

// Waits, without submitting, for every read the kernel took to complete.
int read_ring::wait_for_kernel() {
  const auto kernel_has_one = [this] {
    return std::any_of(slots_.begin(), slots_.end(), [](const slot& s) { return s.submitted; });
  };
  for (unsigned failures = 0; kernel_has_one();) {
    io_uring_cqe* cqe = nullptr;
    const int rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc == 0) {
      failures = 0;
      reap();
    } else if (ring_failed(rc) || ++failures == wait_failures_max) {
      return rc;
    }
  }
  return 0;
}

int read_ring::reset() {
  // What the kernel took, it finishes; whatever is left goes back to the queue's front
  // and starts over (a half-done short read is read again whole). Should the kernel
  // never answer the wait, its reads are given up to it: they read what they would
  // have read anyway, into extents still waiting for it.
  const int waited = wait_for_kernel();
  std::vector<queued_read> unsent;
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    auto& s = slots_[i];
    if (!s.busy) continue;
    unsent.push_back(s.read);
    s = slot{};
    free_.push_back(i);
  }
  in_flight_ = in_window_ = 0;
  bytes_in_window_ = 0;
  // In their first order: the queue stays sorted by number, oldest at its head.
  std::sort(unsent.begin(), unsent.end(),
            [](const queued_read& a, const queued_read& b) { return a.number < b.number; });
  queue_.insert(queue_.begin() + static_cast<std::ptrdiff_t>(head_), unsent.begin(),
                unsent.end());
  ++resets_;
  close();
  const int opened = faults_.fail_reopen() ? -ENOMEM : open();
  return opened < 0 ? opened : waited;
}

std::vector<read_ring::queued_read> read_ring::take_queued() {
  assert(!open_ && in_flight_ == 0);
  std::vector<queued_read> rest(
    queue_.begin() + static_cast<std::ptrdiff_t>(head_), queue_.end());
  queue_.clear();
  head_ = 0;
  return rest;
}

int read_ring::adopt(int source_ring_fd, const std::vector<std::uint64_t>& addresses,
                     const std::vector<std::uint64_t>& sizes) {
  registered_.resize(addresses.size(), 0);
  int rc = -EINVAL;
  if (source_ring_fd >= 0) {
    rc = clone_table(ring_.ring_fd, source_ring_fd, cloned_ ? clone_dst_replace : 0);
    if (rc == -EINVAL && cloned_) {  // a 6.12 kernel cannot replace: unregister, clone
      io_uring_unregister_buffers(&ring_);
      rc = clone_table(ring_.ring_fd, source_ring_fd, 0);
    }
    cloned_ = rc == 0;
  }
  if (rc != 0) rc = register_own(addresses, sizes);
  if (rc == 0) registered_ = addresses;
  // A table half updated may still hold a slot the registrar took back: every read
  // goes through plain buffers until a turn succeeds.
  else registered_.assign(registered_.size(), 0);
  return rc;
}

// Without a clone: this ring's own sparse table, each slot updated where the registrar's
// table differs from what this ring holds (a chunk that came, caller memory that came or
// went).
int read_ring::register_own(const std::vector<std::uint64_t>& addresses,
                            const std::vector<std::uint64_t>& sizes) {
  if (!has_own_table_) {
    const auto slots = static_cast<unsigned>(addresses.size());
    const int rc = io_uring_register_buffers_sparse(&ring_, slots);
    if (rc < 0) return rc;
    has_own_table_ = true;
  }
  for (std::size_t c = 0; c < addresses.size(); ++c) {
    if (addresses[c] == registered_[c]) continue;
    iovec iov{reinterpret_cast<void*>(addresses[c]), sizes[c]};  // {nullptr, 0} empties it
    const __u64 tag = 0;
    const int rc = io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(c), &iov,
                                                        &tag, 1);
    if (rc < 0) return rc;
  }
  return 0;
}

std::size_t read_ring::registered_buffers() const {
  return static_cast<std::size_t>(
    std::count_if(registered_.begin(), registered_.end(), [](auto a) { return a != 0; }));
}

}  // namespace spillway
