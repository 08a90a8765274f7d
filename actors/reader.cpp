// The reader's loop: run the ring once (fill the window, wait, handle completions),
// send each batch what finished, and read the mailbox when the wakeup fired. Blocking
// actors see exit_msg as ordinary mail (STACK.md 2.7): the loop ends on it.
#include "actors/reader.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "runtime/io/read_ring.hpp"
#include "runtime/io/unique_fd.hpp"

namespace spillway {
namespace {

// Mail is served in turns of at most this many messages, so a steady stream of it
// cannot keep the ring from reaping and refilling its window.
constexpr int mail_per_turn = 16;

// A batch waiting for results from this reader, and the results not yet sent to it.
struct client_entry {
  read_client client;
  read_results outbox;
  std::uint64_t outstanding = 0;
};

class reader : public caf::blocking_actor {
public:
  reader(caf::actor_config& cfg, std::uint32_t index, read_section config,
         fault_section faults, registrar_actor registrar)
      : blocking_actor(cfg), config_(std::move(config)), faults_(std::move(faults)),
        registrar_(std::move(registrar)), wakeup_fd_(::eventfd(0, EFD_CLOEXEC)),
        dice_(fault_rates(faults_, index)) {
    stats_.index = index;
  }

  const char* name() const override { return "reader"; }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    blocking_actor::enqueue(std::move(what), host);
    wake();
  }

  void act() override {
    try {
      if (config_.engine == "uring" && wakeup_fd_ && open_ring()) run_ring();
      else stats_.engine = "posix";
      while (running_) serve_mail();  // the posix engine, or a ring given up for pread
    } catch (...) {
      // Before CAF catches it and the batches hear that this reader died and hand its
      // reads' extents to other readers: the kernel must be done writing to them.
      close_ring();
      throw;
    }
    close_ring();
  }

private:
  static read_fault_rates fault_rates(const fault_section& faults, std::uint32_t index) {
    if (!faults.enabled) return {};
    return {.eio = faults.read_error_rate,
            .short_read = faults.short_read_rate,
            .corrupt = faults.corrupt_rate,
            .submit_failure = faults.ring_submit_failure_rate,
            .submit_refusal = faults.ring_submit_refusal_rate,
            .fail_reopen = faults.fail_ring_reopen,
            .seed = faults.seed + index};
  }

  // Created here, in the reader's own thread: SINGLE_ISSUER binds the ring to it.
  bool open_ring() {
    ring_ = std::make_unique<read_ring>(
      static_cast<unsigned>(config_.window), config_.window_bytes, wakeup_fd_.get(),
      fault_rates(faults_, stats_.index),
      [this](std::uint32_t client, std::uint32_t tag, int result) {
        auto& c = clients_[client];
        c.outbox.push_back({tag, result});
        --c.outstanding;
      });
    if (const int rc = ring_->open(); rc < 0) {
      spdlog::warn("reader {}: io_uring unusable ({}), reading with pread", stats_.index,
                   strerrorname_np(-rc));
      ring_.reset();
      return false;
    }
    stats_.engine = "io_uring";
    stats_.ring_flags = ring_->flags();
    caf::anon_send(registrar_, caf::join_atom_v, caf::actor_cast<reader_actor>(this));
    return true;
  }

  // Waits for the reads in flight, unregisters the buffers, exits the ring: here, in the
  // ring's own thread (SINGLE_ISSUER: no other thread can wait on it), before the actor
  // is gone. Then no read taken before a fence can write anymore: reads still queued
  // are dropped.
  void close_ring() {
    if (ring_) {
      if (const int rc = ring_->drain(); rc < 0) {
        spdlog::critical("reader {}: the kernel keeps answering {} with reads in flight; "
                         "their extents may still be written", stats_.index, strerrorname_np(-rc));
        return;  // and its fences are never answered
      }
      ring_.reset();
    }
    answer_fences();
  }

  void run_ring() {
    while (running_ && ring_) {
      const auto resets = ring_->resets();
      const bool woke = ring_->run_once();
      send_results();
      answer_fences();
      const auto throw_after = faults_.enabled ? faults_.reader_throw_after_reads : 0;
      if (throw_after != 0 && ring_->enqueued() >= throw_after)
        throw std::runtime_error("fault.reader_throw_after_reads");
      if (!ring_->is_open()) {
        fall_back_to_pread();
      } else if (ring_->resets() != resets) {
        spdlog::warn("reader {}: ring failed and was reset; asking for the table again",
                     stats_.index);
        caf::anon_send(registrar_, caf::join_atom_v, caf::actor_cast<reader_actor>(this));
      }
      if (!woke) continue;
      ++stats_.wakeups;
      bool more = true;
      for (int served = 0; more && running_ && served < mail_per_turn; ++served)
        serve_mail(caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
      if (more) wake();  // the rest of the mail is the next turn's
    }
  }

  // The ring waits on this eventfd along with its reads.
  void wake() {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wakeup_fd_.get(), &one, sizeof one);
  }

  // A reset that could not set the ring up again (ENOMEM, EMFILE) left it closed with
  // nothing in flight: its unfinished reads, and every read after them, go through pread.
  void fall_back_to_pread() {
    spdlog::error("reader {}: the ring could not be set up again after a failure ({}): "
                  "reading with pread from now on", stats_.index,
                  strerrorname_np(ring_->reset_errno()));
    current_stats();  // keeps the ring's counters
    stats_.engine = "posix";
    stats_.ring_errno = ring_->reset_errno();
    for (const auto& read : ring_->take_queued()) {
      auto& c = clients_[read.client];
      c.outbox.push_back({read.item.tag, pread_item(read.item)});
      --c.outstanding;
      ++stats_.reads_plain;
    }
    ring_.reset();
    send_results();
    answer_fences();
  }

  // A fence waits for the reads taken before it; they finish in any order, and a read
  // is taken by number, so the oldest one unfinished says which fences are through.
  caf::typed_response_promise<std::uint32_t> fence() {
    auto promise = make_response_promise<std::uint32_t>();
    fences_.push_back({ring_ ? ring_->enqueued() : 0, promise});
    answer_fences();
    return promise;
  }

  // In order of arrival, fences wait for ever more reads: those through are a prefix.
  void answer_fences() {
    const auto finished = ring_ ? ring_->oldest_unfinished() : UINT64_MAX;  // pread: at once
    auto f = fences_.begin();
    for (; f != fences_.end() && f->reads_before <= finished; ++f) f->promise.deliver(stats_.index);
    fences_.erase(fences_.begin(), f);
  }

  void send_results() {
    for (auto& c : clients_) {
      if (c.outbox.empty()) continue;
      anon_send(c.client, read_done_atom_v, c.outbox);
      c.outbox.clear();
    }
  }

  // The batch's slot in clients_, reused once it has nothing outstanding.
  std::uint32_t client_slot(const read_client& client) {
    for (std::uint32_t i = 0; i < clients_.size(); ++i)
      if (clients_[i].client == client) return i;
    for (std::uint32_t i = 0; i < clients_.size(); ++i)
      if (clients_[i].outstanding == 0 && clients_[i].outbox.empty()) {
        clients_[i].client = client;
        return i;
      }
    clients_.push_back({client, {}, 0});
    return static_cast<std::uint32_t>(clients_.size() - 1);
  }

  void accept(const read_client& client, const std::vector<read_item>& items) {
    if (!ring_) return read_now(client, items);
    const auto slot = client_slot(client);
    clients_[slot].outstanding += items.size();
    for (const auto& item : items) ring_->enqueue(item, slot);
  }

  // The posix engine: each read in turn, with pread.
  void read_now(const read_client& client, const std::vector<read_item>& items) {
    read_results results;
    for (const auto& item : items) results.push_back({item.tag, pread_item(item)});
    stats_.reads_plain += items.size();
    anon_send(client, read_done_atom_v, std::move(results));
  }

  // The ring's rule: a short read goes again once for its remainder, then it is EIO.
  int pread_item(const read_item& item) {
    std::uint64_t done = 0;
    for (bool retried = false;; retried = true) {
      ssize_t n = -1;
      do {
        n = ::pread(item.fd, reinterpret_cast<char*>(item.address + done), item.length - done,
                    static_cast<off_t>(item.offset + done));
      } while (n < 0 && errno == EINTR);
      const int result = dice_.apply(item, done, n < 0 ? -errno : static_cast<int>(n), retried);
      if (result < 0) return result;
      done += static_cast<std::uint64_t>(result);
      if (done == item.length) return static_cast<int>(done);
      if (retried) return -EIO;  // short twice: the file ends inside the record
      ++stats_.short_reads;
    }
  }

  std::int32_t adopt(const buffer_table& table) {
    if (!ring_) return EOPNOTSUPP;
    const int rc = faults_.enabled && faults_.fail_registration
                     ? -ENOMEM
                     : ring_->adopt(table.source_ring_fd, table.addresses, table.sizes);
    if (rc < 0 && stats_.registration_errno == 0)
      spdlog::warn("reader {}: registering the arena failed ({}): reading through plain "
                   "buffers", stats_.index, strerrorname_np(-rc));
    stats_.registration_errno = -rc;
    return -rc;
  }

  reader_stats current_stats() {
    if (ring_) {
      stats_.registered_buffers = ring_->registered_buffers();
      stats_.reads_fixed = ring_->reads_fixed();
      stats_.reads_plain = ring_->reads_plain();
      stats_.ring_resets = ring_->resets();
      stats_.short_reads = ring_->short_reads();
      stats_.busy_ns = ring_->busy_ns();
      stats_.in_flight_ns = ring_->in_flight_ns();
    }
    return stats_;
  }

  template <class... Timeout>
  void serve_mail(Timeout&&... timeout) {
    receive([this](stats_atom) { return current_stats(); },
            [this](read_atom, const read_client& client, const std::vector<read_item>& items) {
              accept(client, items);
            },
            [this](adopt_atom, const buffer_table& table) { return adopt(table); },
            [this](fence_atom) { return fence(); },
            [this](caf::exit_msg& msg) {
              running_ = false;
              fail_state(std::move(msg.reason));
            },
            std::forward<Timeout>(timeout)...);
  }

  read_section config_;
  fault_section faults_;
  registrar_actor registrar_;
  reader_stats stats_;
  unique_fd wakeup_fd_;
  std::unique_ptr<read_ring> ring_;  // after wakeup_fd_, so destroyed first: it reads the eventfd
  read_fault_dice dice_;  // the posix engine's; the ring has its own
  std::vector<client_entry> clients_;
  struct pending_fence {
    std::uint64_t reads_before = 0;  // the ring's reads numbered below this
    caf::typed_response_promise<std::uint32_t> promise;
  };
  std::vector<pending_fence> fences_;
  bool running_ = true;
};

}  // namespace

reader_actor spawn_reader(caf::actor_system& system, std::uint32_t index,
                          const read_section& config, const fault_section& faults,
                          registrar_actor registrar) {
  return caf::actor_cast<reader_actor>(
    system.spawn<reader>(index, config, faults, std::move(registrar)));
}

}  // namespace spillway
