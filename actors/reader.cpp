// The reader's loop, shaped like liburing's examples: submit, wait, reap into a fixed
// array, then act on what came back. Reads join this loop with the read path; today
// the ring carries only the mailbox wakeup.
#include "actors/reader.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/exit_reason.hpp>
#include <spdlog/spdlog.h>

#include "messages/reader.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t wakeup_tag = 0;  // user_data of the eventfd read; reads use others
constexpr unsigned reap_batch = 64;      // CQEs taken per peek

class reader : public caf::blocking_actor {
public:
  reader(caf::actor_config& cfg, std::uint32_t index, read_section config)
      : blocking_actor(cfg), config_(std::move(config)) {
    stats_.index = index;
    wakeup_fd_ = ::eventfd(0, EFD_CLOEXEC);
  }

  ~reader() override { ::close(wakeup_fd_); }

  const char* name() const override { return "reader"; }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    blocking_actor::enqueue(std::move(what), host);
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wakeup_fd_, &one, sizeof one);
  }

  void act() override {
    if (config_.engine == "uring" && wakeup_fd_ >= 0 && open_ring()) {
      run_ring();
      io_uring_queue_exit(&ring_);
    }
    if (running_) {
      stats_.engine = "posix";
      stats_.ring_flags = 0;
      while (running_) serve_mail();
    }
  }

private:
  // The ring is created here, in the reader's own thread: SINGLE_ISSUER binds it to
  // the creating thread, and DEFER_TASKRUN runs completions only when we wait.
  bool open_ring() {
    const unsigned entries = static_cast<unsigned>(config_.window) + 1;  // + the wakeup
    io_uring_params params{};
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int rc = io_uring_queue_init_params(entries, &ring_, &params);
    if (rc == -EINVAL) {  // kernel older than 6.1: a plain ring does the same work
      params = io_uring_params{};
      rc = io_uring_queue_init_params(entries, &ring_, &params);
    }
    if (rc < 0) {
      spdlog::warn("reader {}: io_uring unusable ({}), serving reads with preadv",
                   stats_.index, strerrorname_np(-rc));
      return false;
    }
    stats_.engine = "io_uring";
    stats_.ring_flags = params.flags;
    return true;
  }

  void arm_wakeup() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never full: one slot is kept for it
    io_uring_prep_read(sqe, wakeup_fd_, &wakeup_count_, sizeof wakeup_count_, 0);
    io_uring_sqe_set_data64(sqe, wakeup_tag);
  }

  void run_ring() {
    arm_wakeup();
    while (running_) {
      int rc = io_uring_submit_and_wait(&ring_, 1);
      if (rc < 0 && rc != -EINTR) {
        spdlog::error("reader {}: io_uring_submit_and_wait: {}, continuing with preadv",
                      stats_.index, strerrorname_np(-rc));
        return;
      }
      if (!reap()) continue;
      ++stats_.wakeups;
      arm_wakeup();  // before draining: mail that lands meanwhile bumps the eventfd again
      drain_mailbox();
    }
  }

  // Returns whether the mailbox woke us.
  bool reap() {
    io_uring_cqe* cqes[reap_batch];
    bool woke = false;
    unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, reap_batch);
    for (unsigned i = 0; i < n; ++i)
      woke |= io_uring_cqe_get_data64(cqes[i]) == wakeup_tag;
    io_uring_cq_advance(&ring_, n);
    return woke;
  }

  void drain_mailbox() {
    for (bool more = true; more && running_;)
      serve_mail(caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
  }

  // Blocking actors see exit_msg as ordinary mail and never stop by themselves
  // (STACK.md 2.7): without the exit handler, shutting the node down would hang.
  template <class... Timeout>
  void serve_mail(Timeout&&... timeout) {
    receive([this](stats_atom) { return stats_; },
            [this](caf::exit_msg& msg) {
              running_ = false;
              fail_state(std::move(msg.reason));
            },
            std::forward<Timeout>(timeout)...);
  }

  read_section config_;
  reader_stats stats_;
  int wakeup_fd_ = -1;
  std::uint64_t wakeup_count_ = 0;  // the eventfd read lands here
  io_uring ring_{};
  bool running_ = true;
};

}  // namespace

caf::actor spawn_reader(caf::actor_system& system, std::uint32_t index,
                        const read_section& config) {
  return system.spawn<reader>(index, config);
}

}  // namespace spillway
