// Turns are served in order: a reader gets the table, registers it (or fails, and
// keeps reading through plain buffers), answers, and only then does the next one go.
// Every change to the table is a new generation; a slot taken back is answered for
// once every reader has adopted a generation without it, since until then a ring may
// still read into that memory with read_fixed.
#include "actors/registrar.hpp"

#include <liburing.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <sys/uio.h>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace spillway {
namespace {

// A slot taken back, and who waits until no reader's table has it.
struct removal {
  std::uint64_t generation = 0;
  caf::typed_response_promise<caf::ok_atom> promise;
};

struct registrar_state {
  std::chrono::milliseconds turn_timeout{};
  io_uring ring{};
  bool source_ok = false;       // the registrar's own table exists: readers can clone it
  buffer_table table;
  std::uint64_t generation = 0;   // of the table; bumped by every change
  std::vector<reader_actor> readers;
  std::vector<std::uint64_t> adopted;  // per reader: the generation it last adopted
  std::vector<removal> removals;
  std::deque<reader_actor> turns;
  bool busy = false;
  static inline const char* name = "registrar";

  ~registrar_state() {
    if (ring.ring_fd <= 0) return;
    io_uring_unregister_buffers(&ring);  // before exit: teardown would pin pages a while
    io_uring_queue_exit(&ring);
  }

  void open_source(std::uint32_t slots) {
    table.addresses.assign(slots, 0);
    table.sizes.assign(slots, 0);
    if (io_uring_queue_init(1, &ring, 0) < 0) return;
    const int rc = io_uring_register_buffers_sparse(&ring, slots);
    source_ok = rc == 0;
    if (source_ok) table.source_ring_fd = ring.ring_fd;
    else spdlog::info("registrar: no source table ({}): readers register on their own rings",
                      strerrorname_np(-rc));
  }

  // Sets a slot of the table; address 0 and size 0 empty it.
  void set_slot(std::uint32_t chunk, std::uint64_t address, std::uint64_t size) {
    ++generation;
    table.addresses[chunk] = address;
    table.sizes[chunk] = size;
    if (!source_ok) return;
    iovec iov{reinterpret_cast<void*>(address), size};
    const __u64 tag = 0;
    const int rc = io_uring_register_buffers_update_tag(&ring, chunk, &iov, &tag, 1);
    if (rc < 0) {
      spdlog::warn("registrar: registering chunk {}: {}; readers register on their own rings",
                   chunk, strerrorname_np(-rc));
      source_ok = false;
      table.source_ring_fd = -1;
    }
  }

  void queue_turn(const reader_actor& reader) {
    if (std::find(turns.begin(), turns.end(), reader) == turns.end()) turns.push_back(reader);
  }

  void forget(const reader_actor& reader) {
    const auto at = std::find(readers.begin(), readers.end(), reader);
    if (at == readers.end()) return;
    adopted.erase(adopted.begin() + (at - readers.begin()));
    readers.erase(at);
  }

  // Answers the removals that every reader's table is past.
  void settle_removals() {
    const auto oldest = readers.empty() ? generation
                                        : *std::min_element(adopted.begin(), adopted.end());
    auto done = std::stable_partition(removals.begin(), removals.end(),
                                      [oldest](const removal& r) { return r.generation > oldest; });
    for (auto r = done; r != removals.end(); ++r) r->promise.deliver(caf::ok_atom_v);
    removals.erase(done, removals.end());
  }
};

using registrar_pointer = registrar_actor::stateful_pointer<registrar_state>;

void next_turn(registrar_pointer self) {
  auto& st = self->state;
  if (st.busy || st.turns.empty()) return;
  auto reader = st.turns.front();
  st.turns.pop_front();
  st.busy = true;
  // A reader that fails still adopts: it stops using its whole table (read_ring::adopt).
  self->request(reader, st.turn_timeout, adopt_atom_v, st.table)
    .then(
      [self, reader, generation = st.generation](std::int32_t) {  // it logs its failure once
        auto& st = self->state;
        const auto at = std::find(st.readers.begin(), st.readers.end(), reader);
        if (at != st.readers.end()) st.adopted[at - st.readers.begin()] = generation;
        st.settle_removals();
        st.busy = false;
        next_turn(self);
      },
      [self, reader](caf::error& err) {
        auto& st = self->state;
        if (err == caf::sec::request_timeout) {
          // Slow, not gone: it answers when it can, and gets the table as it is then.
          st.queue_turn(reader);
        } else {  // gone (restarted or stopping): forget it
          st.forget(reader);
          st.settle_removals();
        }
        st.busy = false;
        next_turn(self);
      });
}

// A fence of every reader, answered once each has answered or is gone. No timeout: a
// reader answers when its reads complete, and the kernel completes every read.
caf::result<std::uint32_t> fence_all(registrar_pointer self) {
  const auto& readers = self->state.readers;
  if (readers.empty()) return std::uint32_t{0};
  struct tally {
    caf::typed_response_promise<std::uint32_t> promise;
    std::size_t left;
    std::uint32_t answered = 0;
  };
  auto t = std::make_shared<tally>(tally{self->make_response_promise<std::uint32_t>(),
                                         readers.size()});
  for (const auto& r : readers)
    self->request(r, caf::infinite, fence_atom_v)
      .then(
        [t](std::uint32_t) {
          ++t->answered;
          if (--t->left == 0) t->promise.deliver(t->answered);
        },
        [t](caf::error&) {  // gone: it drained its ring before it went (actors/reader.cpp)
          if (--t->left == 0) t->promise.deliver(t->answered);
        });
  return t->promise;
}

// Every reader gets a turn with the changed table.
void table_changed(registrar_pointer self) {
  for (const auto& r : self->state.readers) self->state.queue_turn(r);
  next_turn(self);
}

registrar_actor::behavior_type registrar(registrar_pointer self, std::uint32_t slots,
                                         std::chrono::milliseconds turn_timeout) {
  self->state.turn_timeout = turn_timeout;
  self->state.open_source(slots);
  return {
    [self](caf::add_atom, std::uint32_t slot, std::uint64_t address, std::uint64_t size) {
      self->state.set_slot(slot, address, size);
      table_changed(self);
    },
    [self](caf::delete_atom, std::uint32_t slot) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (slot >= st.table.addresses.size())
        return caf::make_error(caf::sec::invalid_argument,
                               "registrar: no slot " + std::to_string(slot));
      st.set_slot(slot, 0, 0);
      auto promise = self->make_response_promise<caf::ok_atom>();
      st.removals.push_back({st.generation, promise});
      st.settle_removals();  // no reader: nobody can read into it
      table_changed(self);
      return promise;
    },
    [self](caf::join_atom, reader_actor reader) {
      auto& st = self->state;
      if (std::find(st.readers.begin(), st.readers.end(), reader) == st.readers.end()) {
        st.readers.push_back(reader);
        st.adopted.push_back(0);
      }
      st.queue_turn(reader);
      next_turn(self);
    },
    [self](fence_atom) { return fence_all(self); },
  };
}

}  // namespace

registrar_actor spawn_registrar(caf::actor_system& system, std::uint32_t slots,
                                std::chrono::milliseconds turn_timeout) {
  return system.spawn<caf::detached>(registrar, slots, turn_timeout);
}

}  // namespace spillway
